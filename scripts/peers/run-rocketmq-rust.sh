#!/usr/bin/env bash
# Starts the rocketmq-rust name server and broker (installed by
# install-rocketmq-rust.sh) on chosen ports with a fresh temporary store, in
# the background, and prints how to reach and stop them:
#
#   scripts/peers/run-rocketmq-rust.sh [--namesrv-port 29876] [--broker-port 30911]
#                                      [--bin target/peers/bin] [--dir DIR]
#   scripts/peers/run-rocketmq-rust.sh stop --dir DIR
#
# stdout gets shell assignments, so `eval "$(scripts/peers/run-rocketmq-rust.sh)"`
# sets ROCKETMQ_RUST_NAMESRV (host:port), ROCKETMQ_RUST_NAMESRV_PID,
# ROCKETMQ_RUST_BROKER_PID and ROCKETMQ_RUST_DIR. Progress and errors go to
# stderr; logs are DIR/namesrv.log and DIR/broker.log.
#
# Ports: the broker also listens on broker-port - 2 (its "fast" port) and
# broker-port + 1 (HA); all three must be free. Everything binds 127.0.0.1.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
NAMESRV_PORT=29876
BROKER_PORT=30911
BIN="target/peers/bin"
DIR=""
ACTION=start
READY_TIMEOUT_S="${READY_TIMEOUT_S:-60}"

while [[ $# -gt 0 ]]; do
    case "$1" in
        stop) ACTION=stop; shift ;;
        --namesrv-port) NAMESRV_PORT="$2"; shift 2 ;;
        --broker-port) BROKER_PORT="$2"; shift 2 ;;
        --bin) BIN="$2"; shift 2 ;;
        --dir) DIR="$2"; shift 2 ;;
        -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done

if [[ "$ACTION" == "stop" ]]; then
    [[ -n "$DIR" && -f "$DIR/pids" ]] || { echo "stop needs --dir DIR holding a pids file" >&2; exit 2; }
    while read -r name pid; do
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" && echo "stopped $name (pid $pid)" >&2
        fi
    done < "$DIR/pids"
    exit 0
fi

NAMESRV_BIN="$BIN/rocketmq-namesrv-rust"
BROKER_BIN="$BIN/rocketmq-broker-rust"
for bin in "$NAMESRV_BIN" "$BROKER_BIN"; do
    [[ -x "$bin" ]] || { echo "$bin not found: run scripts/peers/install-rocketmq-rust.sh first" >&2; exit 1; }
done

if [[ -z "$DIR" ]]; then
    DIR="$(mktemp -d "${TMPDIR:-/tmp}/rocketmq-rust.XXXXXX")"
fi
mkdir -p "$DIR/home/conf" "$DIR/store"
DIR="$(cd "$DIR" && pwd)"

cat > "$DIR/namesrv.toml" <<CONF
rocketmqHome = "$DIR/home"
kvConfigPath = "$DIR/home/kvConfig.json"
configStorePath = "$DIR/home/namesrv.properties"
CONF

cat > "$DIR/broker.conf" <<CONF
brokerClusterName=DefaultCluster
brokerName=rocketmq-rust-a
brokerId=0
brokerIP1=127.0.0.1
listenPort=$BROKER_PORT
haListenPort=$((BROKER_PORT + 1))
namesrvAddr=127.0.0.1:$NAMESRV_PORT
storePathRootDir=$DIR/store
autoCreateTopicEnable=true
flushDiskType=ASYNC_FLUSH
CONF

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
    local name="$1" port="$2" pid="$3" log="$4"
    for _ in $(seq 1 $((READY_TIMEOUT_S * 5))); do
        if port_open "$port"; then
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "$name exited; last log lines:" >&2
            tail -n 20 "$log" >&2
            return 1
        fi
        sleep 0.2
    done
    echo "$name did not listen on $port within ${READY_TIMEOUT_S}s; see $log" >&2
    return 1
}

export ROCKETMQ_HOME="$DIR/home"
: > "$DIR/pids"

"$NAMESRV_BIN" -c "$DIR/namesrv.toml" --listenPort "$NAMESRV_PORT" --bindAddress 127.0.0.1 \
    --rocketmqHome "$DIR/home" > "$DIR/namesrv.log" 2>&1 &
NAMESRV_PID=$!
echo "namesrv $NAMESRV_PID" >> "$DIR/pids"
wait_port namesrv "$NAMESRV_PORT" "$NAMESRV_PID" "$DIR/namesrv.log"
echo "rocketmq-rust namesrv pid $NAMESRV_PID on 127.0.0.1:$NAMESRV_PORT" >&2

"$BROKER_BIN" -c "$DIR/broker.conf" -n "127.0.0.1:$NAMESRV_PORT" > "$DIR/broker.log" 2>&1 &
BROKER_PID=$!
echo "broker $BROKER_PID" >> "$DIR/pids"
wait_port broker "$BROKER_PORT" "$BROKER_PID" "$DIR/broker.log"
echo "rocketmq-rust broker pid $BROKER_PID on 127.0.0.1:$BROKER_PORT (store $DIR/store)" >&2
echo "stop with: scripts/peers/run-rocketmq-rust.sh stop --dir $DIR" >&2

echo "ROCKETMQ_RUST_NAMESRV=127.0.0.1:$NAMESRV_PORT"
echo "ROCKETMQ_RUST_NAMESRV_PID=$NAMESRV_PID"
echo "ROCKETMQ_RUST_BROKER_PID=$BROKER_PID"
echo "ROCKETMQ_RUST_DIR=$DIR"
