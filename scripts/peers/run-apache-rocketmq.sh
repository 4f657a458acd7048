#!/usr/bin/env bash
# Starts one Apache RocketMQ server (installed by install-apache-rocketmq.sh)
# with `java` directly: the main class and JVM options bin/mqnamesrv,
# bin/mqbroker, bin/mqcontroller and bin/mqproxy (through runserver.sh and
# runbroker.sh) would use, sized for tests on a small host, on ports the
# caller gives, in a run directory of its own.
#
#   scripts/peers/run-apache-rocketmq.sh [OPTIONS] namesrv    --port P
#   scripts/peers/run-apache-rocketmq.sh [OPTIONS] broker     --port P --namesrv HOST:PORT
#                                        [--name broker-a] [--id 0] [--role ASYNC_MASTER]
#   scripts/peers/run-apache-rocketmq.sh [OPTIONS] controller --port P
#   scripts/peers/run-apache-rocketmq.sh [OPTIONS] proxy      --port GRPC --namesrv HOST:PORT
#                                        [--remoting-port R]
#   scripts/peers/run-apache-rocketmq.sh stop --dir DIR
#
# OPTIONS: --home INSTALL (default: $TARGET_DIR/apache-rocketmq/5.5.0, see
# the install script), --dir DIR (the run directory; default a new
# temporary one), --set key=value (repeatable: any server setting, RocketMQ
# names; for the proxy, a field of rmq-proxy.json), --foreground (exec
# java in this process, output on stdout, so the caller owns the pid).
# Without --foreground the server runs in the background, this script waits
# until it listens, and stdout gets shell assignments:
#   APACHE_ROCKETMQ_PID, APACHE_ROCKETMQ_DIR, APACHE_ROCKETMQ_LOG
# `stop --dir DIR` stops exactly the pid recorded in DIR/pid (SIGTERM, then
# SIGKILL after STOP_GRACE_S, default 30: a Java broker's graceful shutdown
# takes 15 s and more). Everything binds 127.0.0.1 (brokers announce
# brokerIP1=127.0.0.1). A broker also listens on P - 2 (its "fast" port) and
# P + 1 (HA): all three must be free. Its store is DIR/store unless
# storePathRootDir is set. Logs: DIR/ROLE.out (console) and
# DIR/logs/rocketmqlogs (the server's own logback files; user.home is DIR).
# Environment: JAVA (default: java on PATH), HEAP_MIN / HEAP_MAX (default
# 256m / 512m), DIRECT_MAX (512m), JAVA_OPT_EXT (extra JVM options, as the
# distribution's scripts take), READY_TIMEOUT_S (60).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT="$(pwd)"
TARGET_DIR="${TARGET_DIR:-${CARGO_TARGET_DIR:-$ROOT/target}}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
HOME_DIR="$TARGET_DIR/apache-rocketmq/5.5.0"
DIR=""
FOREGROUND=0
ROLE=""
PORT=""
REMOTING_PORT=""
NAMESRV=""
BROKER_NAME="broker-a"
BROKER_ID=""
BROKER_ROLE="ASYNC_MASTER"
SETTINGS=()
READY_TIMEOUT_S="${READY_TIMEOUT_S:-60}"

usage() { sed -n '2,33p' "${BASH_SOURCE[0]}"; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        namesrv|broker|controller|proxy|stop) ROLE="$1"; shift ;;
        --home) HOME_DIR="$2"; shift 2 ;;
        --dir) DIR="$2"; shift 2 ;;
        --foreground) FOREGROUND=1; shift ;;
        --port) PORT="$2"; shift 2 ;;
        --remoting-port) REMOTING_PORT="$2"; shift 2 ;;
        --namesrv) NAMESRV="$2"; shift 2 ;;
        --name) BROKER_NAME="$2"; shift 2 ;;
        --id) BROKER_ID="$2"; shift 2 ;;
        --role) BROKER_ROLE="$2"; shift 2 ;;
        --set) SETTINGS+=("$2"); shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

# stop_pid PID: SIGTERM, then SIGKILL after STOP_GRACE_S; only that pid.
stop_pid() {
    local pid="$1" grace="${STOP_GRACE_S:-30}"
    kill -0 "$pid" 2>/dev/null || return 0
    kill "$pid"
    for _ in $(seq 1 $((grace * 10))); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    echo "pid $pid still running $grace s after SIGTERM; killing it" >&2
    kill -9 "$pid" 2>/dev/null || true
}

if [[ "$ROLE" == "stop" ]]; then
    [[ -n "$DIR" && -f "$DIR/pid" ]] || { echo "stop needs --dir DIR holding a pid file" >&2; exit 2; }
    pid="$(cat "$DIR/pid")"
    stop_pid "$pid"
    echo "stopped $(cat "$DIR/role" 2>/dev/null || echo server) (pid $pid)" >&2
    exit 0
fi

[[ -n "$ROLE" ]] || { usage >&2; exit 2; }
[[ -n "$PORT" ]] || { echo "$ROLE needs --port" >&2; exit 2; }
[[ -s "$HOME_DIR/classpath" ]] || {
    echo "no install at $HOME_DIR: run scripts/peers/install-apache-rocketmq.sh first (or pass --home)" >&2
    exit 1
}
if [[ "$ROLE" == broker || "$ROLE" == proxy ]]; then
    [[ -n "$NAMESRV" ]] || { echo "$ROLE needs --namesrv HOST:PORT" >&2; exit 2; }
fi
if [[ -z "$DIR" ]]; then
    DIR="$(mktemp -d "${TMPDIR:-/tmp}/apache-rocketmq-$ROLE.XXXXXX")"
fi
mkdir -p "$DIR/home/conf"
DIR="$(cd "$DIR" && pwd)"
echo "$ROLE" > "$DIR/role"

# settings FILE: the caller's --set lines, appended to a properties file.
append_settings() {
    local setting
    for setting in "${SETTINGS[@]+"${SETTINGS[@]}"}"; do
        echo "$setting" >> "$1"
    done
}

# Writes the role's configuration file; sets MAIN, ARGS, CONF_FILE and
# LOGBACK (the logback file the distribution's start script names, which
# the role's jar also carries).
configure() {
    case "$ROLE" in
        namesrv)
            CONF_FILE="$DIR/namesrv.properties"
            {
                echo "listenPort=$PORT"
                echo "bindAddress=127.0.0.1"
                echo "kvConfigPath=$DIR/namesrv/kvConfig.json"
            } > "$CONF_FILE"
            MAIN=org.apache.rocketmq.namesrv.NamesrvStartup
            LOGBACK=rmq.namesrv.logback.xml
            ;;
        broker)
            local id="${BROKER_ID:-}"
            if [[ -z "$id" ]]; then
                [[ "$BROKER_ROLE" == SLAVE ]] && id=1 || id=0
            fi
            CONF_FILE="$DIR/broker.conf"
            {
                echo "brokerClusterName=DefaultCluster"
                echo "brokerName=$BROKER_NAME"
                echo "brokerId=$id"
                echo "brokerRole=$BROKER_ROLE"
                echo "brokerIP1=127.0.0.1"
                echo "bindAddress=127.0.0.1"
                echo "listenPort=$PORT"
                echo "haListenPort=$((PORT + 1))"
                echo "namesrvAddr=$NAMESRV"
                echo "storePathRootDir=$DIR/store"
                echo "storePathCommitLog=$DIR/store/commitlog"
                echo "autoCreateTopicEnable=true"
                echo "flushDiskType=ASYNC_FLUSH"
                # Test-sized segments: 64 MiB CommitLog files, not 1 GiB.
                echo "mappedFileSizeCommitLog=67108864"
                echo "mappedFileSizeTimerLog=16777216"
            } > "$CONF_FILE"
            MAIN=org.apache.rocketmq.broker.BrokerStartup
            LOGBACK=rmq.broker.logback.xml
            ;;
        controller)
            CONF_FILE="$DIR/controller.properties"
            {
                # The DLedger controller answers on its peer address: that
                # is the controller's address (brokers' controllerAddr).
                echo "listenPort=$PORT"
                echo "controllerDLegerGroup=group1"
                echo "controllerDLegerPeers=n0-127.0.0.1:$PORT"
                echo "controllerDLegerSelfId=n0"
                echo "bindAddress=127.0.0.1"
                echo "controllerStorePath=$DIR/controller-store"
                echo "mappedFileSize=16777216"
            } > "$CONF_FILE"
            MAIN=org.apache.rocketmq.controller.ControllerStartup
            LOGBACK=rmq.controller.logback.xml
            ;;
        proxy)
            CONF_FILE="$DIR/rmq-proxy.json"
            write_proxy_json "$CONF_FILE"
            MAIN=org.apache.rocketmq.proxy.ProxyStartup
            LOGBACK=rmq.proxy.logback.xml
            ARGS=(-pc "$CONF_FILE")
            return
            ;;
    esac
    append_settings "$CONF_FILE"
    ARGS=(-c "$CONF_FILE")
}

# The proxy reads JSON: its ports, the name server and each --set as a field.
write_proxy_json() {
    local setting
    {
        echo "{"
        echo "  \"rocketMQClusterName\": \"DefaultCluster\","
        echo "  \"namesrvAddr\": \"$NAMESRV\","
        echo "  \"remotingListenPort\": ${REMOTING_PORT:-$((PORT + 1))},"
        for setting in "${SETTINGS[@]+"${SETTINGS[@]}"}"; do
            echo "  \"${setting%%=*}\": \"${setting#*=}\","
        done
        echo "  \"grpcServerPort\": $PORT"
        echo "}"
    } > "$1"
}

# The JVM options runserver.sh / runbroker.sh pass on Java 9+, with the heap
# and direct memory sized for tests, plus the module openings Java 17 needs
# (the store casts to sun.nio.ch.DirectBuffer and reflects into java.nio).
jvm_options() {
    JAVA_OPTS=(-server "-Xms${HEAP_MIN:-256m}" "-Xmx${HEAP_MAX:-512m}")
    if [[ "$ROLE" != broker ]]; then
        JAVA_OPTS+=(-XX:MetaspaceSize=128m -XX:MaxMetaspaceSize=320m)
    fi
    JAVA_OPTS+=(-XX:+UseG1GC -XX:G1HeapRegionSize=16m -XX:G1ReservePercent=25
        -XX:InitiatingHeapOccupancyPercent=30 -XX:SoftRefLRUPolicyMSPerMB=0
        "-Xlog:gc*:file=$DIR/gc_%p.log:time,tags:filecount=5,filesize=30M"
        -XX:-OmitStackTraceInFastThrow -XX:-UseLargePages)
    if [[ "$ROLE" == broker ]]; then
        JAVA_OPTS+=("-XX:MaxDirectMemorySize=${DIRECT_MAX:-512m}" -XX:+IgnoreUnrecognizedVMOptions)
    fi
    local pkg
    for pkg in java.lang java.lang.reflect java.util java.nio sun.nio.ch; do
        JAVA_OPTS+=(--add-opens "java.base/$pkg=ALL-UNNAMED")
    done
    JAVA_OPTS+=(--add-exports java.base/sun.nio.ch=ALL-UNNAMED)
    # Temp files (RocksDB's JNI library, Netty's self-signed keys) go under
    # DIR, so deleting DIR deletes them: /tmp is left as it was.
    mkdir -p "$DIR/tmp"
    JAVA_OPTS+=("-Duser.home=$DIR" "-Drocketmq.home.dir=$DIR/home" "-Djava.io.tmpdir=$DIR/tmp"
        "-Drmq.logback.configurationFile=$LOGBACK" "-DRMQ_PROXY_HOME=$DIR/home")
    # shellcheck disable=SC2206 # JAVA_OPT_EXT is split on purpose, as runbroker.sh does.
    JAVA_OPTS+=(${JAVA_OPT_EXT:-})
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

configure
jvm_options
JAVA_BIN="${JAVA:-java}"
export ROCKETMQ_HOME="$DIR/home"
CLASSPATH_FILE="$HOME_DIR/classpath"
COMMAND=("$JAVA_BIN" "${JAVA_OPTS[@]}" -cp "$(cat "$CLASSPATH_FILE")" "$MAIN" "${ARGS[@]}")
printf '%q ' "${COMMAND[@]}" > "$DIR/command"

if [[ "$FOREGROUND" == 1 ]]; then
    echo "$$" > "$DIR/pid"
    exec "${COMMAND[@]}"
fi

LOG="$DIR/$ROLE.out"
"${COMMAND[@]}" > "$LOG" 2>&1 < /dev/null &
PID=$!
echo "$PID" > "$DIR/pid"
for _ in $(seq 1 $((READY_TIMEOUT_S * 5))); do
    if port_open "$PORT"; then
        break
    fi
    if ! kill -0 "$PID" 2>/dev/null; then
        echo "$ROLE exited; last lines of $LOG:" >&2
        tail -n 20 "$LOG" >&2
        exit 1
    fi
    sleep 0.2
done
if ! port_open "$PORT"; then
    echo "$ROLE did not listen on $PORT within ${READY_TIMEOUT_S}s (stopping pid $PID); see $LOG" >&2
    stop_pid "$PID"
    exit 1
fi
echo "Apache RocketMQ $ROLE pid $PID on 127.0.0.1:$PORT (run dir $DIR)" >&2
echo "stop with: scripts/peers/run-apache-rocketmq.sh stop --dir $DIR" >&2
echo "APACHE_ROCKETMQ_PID=$PID"
echo "APACHE_ROCKETMQ_DIR=$DIR"
echo "APACHE_ROCKETMQ_LOG=$LOG"
