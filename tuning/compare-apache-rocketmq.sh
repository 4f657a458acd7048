#!/usr/bin/env bash
# Ferrocket against Apache RocketMQ's own broker (5.5.0, installed by
# scripts/peers/install-apache-rocketmq.sh), on this host, with the same
# harness and workload: one interleaved `ferrocket-bench compare` run per
# row (A, B, A, B, ... rounds, both brokers running all the time), the
# null broker's ceiling in the same run (--with-ceiling).
#
# Both brokers: RocketMQ's default layout (1 GiB CommitLog segments,
# 300,000-entry ConsumeQueues, ASYNC_FLUSH unless a row says otherwise),
# one name server each, everything on 127.0.0.1. Ferrocket: the release
# build with its defaults. Java: bin/runbroker.sh's JVM options (8 GiB heap
# pre-touched, 15 GiB direct memory, G1), Java 17. Each row starts both
# from empty stores, and before a measured row each broker takes a warm-up
# run (JIT, page cache, topic creation) that is not counted.
#
#   tuning/compare-apache-rocketmq.sh [ROW...]
#
# Rows (default: all but recovery):
#   send1k     produce 1 KiB, JSON headers, 4 connections x 64 in flight
#   send128    the same with 128 B bodies
#   e2e        produce at 20,000 msg/s while consumers long-poll (e2e latency)
#   sync1k     send1k with flushDiskType=SYNC_FLUSH on both (restarts them)
#   replication  send1k to a SYNC_MASTER with one SLAVE each on this host
#              (restarts them; CPU is the masters'; the Java slave's heap
#              is SLAVE_HEAP, 2g)
#   drain      PRELOAD messages produced, then read from offset 0 by pull
#              again and again for DRAIN_SECS (pages cached; A, B, A, B)
#   startup    seconds from exec to the broker's first answer, 3 times each
#   recovery   kill -9 after RECOVERY_GIB GiB written, then seconds to the
#              first answer again (restarts them; slow: not in the default)
# Resident memory (VmRSS) is printed at idle after start-up and at the end
# of each send row.
#
# Environment: FERROCKET (target/release/ferrocket), BENCH
# (target/release/ferrocket-bench), ROUNDS (5), ROUND_SECS (5), PRELOAD
# (400000), DRAIN_SECS (10), RECOVERY_GIB (10), JAVA_HEAP (8g), KEEP=1 keeps the work dir.
# Every process is stopped by pid; the stores are deleted at the end.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
FERROCKET=${FERROCKET:-target/release/ferrocket}
BENCH=${BENCH:-target/release/ferrocket-bench}
ROUNDS=${ROUNDS:-5}
ROUND_SECS=${ROUND_SECS:-5}
PRELOAD=${PRELOAD:-400000}
DRAIN_SECS=${DRAIN_SECS:-10}
RECOVERY_GIB=${RECOVERY_GIB:-10}
JAVA_HEAP=${JAVA_HEAP:-8g}
RUN_APACHE=scripts/peers/run-apache-rocketmq.sh
ROWS=("$@")
[[ ${#ROWS[@]} -gt 0 ]] || ROWS=(send1k send128 e2e sync1k replication drain startup)

for bin in "$FERROCKET" "$BENCH"; do
    [[ -x "$bin" ]] || { echo "no $bin: cargo build --release --bin ferrocket --bin ferrocket-bench" >&2; exit 1; }
done
W=$(mktemp -d /tmp/compare-apache.XXXXXX)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# A broker port P needs P-2 (Java's fast port) and P+1 (HA) free too.
broker_port() {
    local p
    while :; do
        p=$(port)
        if ((p > 1100 && p < 65000)) && ! port_open $((p - 2)) && ! port_open $((p + 1)); then
            echo "$p"; return
        fi
    done
}
# Waits until the broker on port $1 answers a Remoting request
# (GET_BROKER_RUNTIME_INFO): a port may accept connections before the
# store is recovered.
answers() {
    python3 - "$1" <<'PY'
import json, socket, struct, sys, time
header = json.dumps({"code": 28, "flag": 0, "language": "JAVA", "opaque": 1,
                     "serializeTypeCurrentRPC": "JSON", "version": 433}).encode()
frame = struct.pack(">ii", 4 + len(header), len(header)) + header
while True:
    try:
        with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2) as s:
            s.sendall(frame)
            if len(s.recv(4)) == 4:
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.02)
PY
}
seconds_since() { awk -v a="$(now_s)" -v b="$1" 'BEGIN { printf "%.2f", a - b }'; }
rss_mib() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null; }
now_s() { date +%s.%N; }

F_NS_PORT=$(port); J_NS_PORT=$(port)
F_PORT=$(broker_port); J_PORT=$(broker_port)
F_NS=""; J_NS_DIR=""; F_BR=""; J_DIR=""; J_PID=""; F_UP_S=""; J_UP_S=""
F_SLAVE=""; J_SLAVE_DIR=""

start_namesrvs() {
    "$ROOT/$FERROCKET" namesrv --listen-addr 127.0.0.1 --listen-port "$F_NS_PORT" \
        --set "kvConfigPath=$W/f-ns/kvConfig.json" > "$W/f-ns.log" 2>&1 &
    F_NS=$!
    J_NS_DIR="$W/j-ns"
    eval "$("$RUN_APACHE" namesrv --port "$J_NS_PORT" --dir "$J_NS_DIR" | grep '^APACHE_ROCKETMQ_PID=')"
}

# start_ferrocket [--set k=v ...]: sets F_BR and F_UP_S (seconds until the
# port answered).
start_ferrocket() {
    local t0; t0=$(now_s)
    "$ROOT/$FERROCKET" broker --listen-addr 127.0.0.1 --listen-port "$F_PORT" -n "127.0.0.1:$F_NS_PORT" \
        --store-path-root-dir "$W/f-store" --set "haListenPort=$((F_PORT + 1))" \
        --set diskMaxUsedSpaceRatio=95 "$@" >> "$W/f-broker.log" 2>&1 &
    F_BR=$!
    timeout 600 bash -c "$(declare -f answers); answers $F_PORT" \
        || { echo "ferrocket broker did not answer; see $W/f-broker.log" >&2; exit 1; }
    F_UP_S=$(seconds_since "$t0")
}

# start_java [key=value ...]: sets J_PID and J_UP_S.
start_java() {
    local t0 out setting sets=()
    for setting in "$@"; do sets+=(--set "$setting"); done
    t0=$(now_s)
    J_DIR="$W/j-broker"
    out=$(HEAP_MIN=$JAVA_HEAP HEAP_MAX=$JAVA_HEAP DIRECT_MAX=15g JAVA_OPT_EXT="-XX:+AlwaysPreTouch" \
        READY_TIMEOUT_S=600 "$RUN_APACHE" broker --port "$J_PORT" --namesrv "127.0.0.1:$J_NS_PORT" --dir "$J_DIR" \
        --set mappedFileSizeCommitLog=1073741824 --set brokerIP2=127.0.0.1 --set storePathRootDir="$W/j-store" \
        --set storePathCommitLog="$W/j-store/commitlog" "${sets[@]+"${sets[@]}"}" 2> "$W/j-start.err") \
        || { cat "$W/j-start.err" >&2; exit 1; }
    J_PID=$(sed -n 's/^APACHE_ROCKETMQ_PID=//p' <<< "$out")
    timeout 600 bash -c "$(declare -f answers); answers $J_PORT" || { echo "java broker did not answer" >&2; exit 1; }
    J_UP_S=$(seconds_since "$t0")
}

stop_ferrocket() { [[ -n "$F_BR" ]] && kill "$F_BR" 2>/dev/null && wait "$F_BR" 2>/dev/null; F_BR=""; }
stop_java() { [[ -n "$J_PID" ]] && STOP_GRACE_S=60 "$RUN_APACHE" stop --dir "$J_DIR" 2>/dev/null; J_PID=""; }
kill9_both() {
    kill -9 "$F_BR" "$J_PID" 2>/dev/null
    wait "$F_BR" 2>/dev/null
    while kill -0 "$J_PID" 2>/dev/null; do sleep 0.1; done
    F_BR=""; J_PID=""
}
stop_slaves() {
    [[ -n "$F_SLAVE" ]] && kill "$F_SLAVE" 2>/dev/null && wait "$F_SLAVE" 2>/dev/null
    [[ -n "$J_SLAVE_DIR" ]] && STOP_GRACE_S=60 "$RUN_APACHE" stop --dir "$J_SLAVE_DIR" 2>/dev/null
    F_SLAVE=""; J_SLAVE_DIR=""
}
cleanup() {
    stop_slaves; stop_ferrocket; stop_java
    [[ -n "$F_NS" ]] && kill "$F_NS" 2>/dev/null
    [[ -n "$J_NS_DIR" ]] && "$RUN_APACHE" stop --dir "$J_NS_DIR" 2>/dev/null
    wait 2>/dev/null
    if [[ "${KEEP:-0}" == 1 ]]; then
        rm -rf "$W/f-store" "$W/j-store" "$W/f-slave-store" "$W/j-slave/store"; echo "logs: $W"
    else
        rm -rf "$W"
    fi
}
trap cleanup EXIT

# Waits until the name server on port $1 lists the broker on port $2.
registered() {
    local _
    for _ in $(seq 1 300); do
        "$ROOT/$FERROCKET" admin -n "127.0.0.1:$1" cluster list 2>/dev/null | grep -q "127.0.0.1:$2" && return 0
        sleep 0.2
    done
    echo "the broker on $2 did not register with the name server on $1 within 60 s" >&2
    return 1
}

# Stops both brokers (and any slaves) and deletes their stores: a row that
# restarts them starts from empty stores, so the rows' data never adds up
# (a send row writes gigabytes).
wipe_both() {
    stop_slaves; stop_ferrocket; stop_java
    rm -rf "$W/f-store" "$W/j-store" "$W/f-slave-store" "$W/j-slave/store"
}

start_both() { # start_both [key=value ...] (the same settings on both)
    local setting fsets=()
    for setting in "$@"; do fsets+=(--set "$setting"); done
    start_ferrocket "${fsets[@]+"${fsets[@]}"}"
    start_java "$@"
    echo "start-up (exec to the first answer): ferrocket $F_UP_S s, java $J_UP_S s"
    registered "$F_NS_PORT" "$F_PORT" && registered "$J_NS_PORT" "$J_PORT"
    echo "resident at idle: ferrocket $(rss_mib "$F_BR") MiB, java $(rss_mib "$J_PID") MiB"
}

compare() { # compare NAME [bench options]: one interleaved run
    local name=$1; shift
    echo "== $name: load $(cut -d' ' -f1-3 /proc/loadavg)"
    timeout 900 "$BENCH" compare --namesrv-a "127.0.0.1:$F_NS_PORT" --label-a ferrocket --broker-pid-a "$F_BR" \
        --namesrv-b "127.0.0.1:$J_NS_PORT" --label-b apache-rocketmq-5.5.0 --broker-pid-b "$J_PID" \
        --rounds "$ROUNDS" --round-secs "$ROUND_SECS" --topic "Cmp$name" --out "$W/report-$name" --quiet "$@" \
        > "$W/$name.txt" 2>&1
    tail -n 30 "$W/$name.txt"
    echo "resident after $name: ferrocket $(rss_mib "$F_BR") MiB, java $(rss_mib "$J_PID") MiB"
}

warm_up() {
    local ns
    for ns in "$F_NS_PORT" "$J_NS_PORT"; do
        timeout 120 "$BENCH" produce -n "127.0.0.1:$ns" --topic WarmUp --size 1024 --connections 4 --inflight 64 \
            --duration 15 --warmup 0 --quiet > "$W/warmup-$ns.txt" 2>&1 || tail -5 "$W/warmup-$ns.txt"
    done
}

send_opts=(--workload produce --header-encoding json --connections 4 --inflight 64 --with-ceiling)

row_send1k() { wipe_both; start_both; warm_up; compare send1k "${send_opts[@]}" --size 1024; }
row_send128() { wipe_both; start_both; warm_up; compare send128 "${send_opts[@]}" --size 128; }
row_e2e() {
    wipe_both; start_both; warm_up
    compare e2e --workload e2e --header-encoding json --connections 4 --inflight 64 --size 1024 \
        --rate 20000 --consumer-connections 2
}
row_sync1k() {
    wipe_both
    start_both flushDiskType=SYNC_FLUSH
    warm_up
    compare sync1k "${send_opts[@]}" --size 1024
    wipe_both
    start_both
    warm_up
}
row_replication() {
    local fs_port js_port
    wipe_both
    start_both brokerRole=SYNC_MASTER
    fs_port=$(broker_port); js_port=$(broker_port)
    "$ROOT/$FERROCKET" broker --listen-addr 127.0.0.1 --listen-port "$fs_port" -n "127.0.0.1:$F_NS_PORT" \
        --store-path-root-dir "$W/f-slave-store" --set brokerId=1 --set brokerRole=SLAVE \
        --set "haListenPort=$((fs_port + 1))" >> "$W/f-slave.log" 2>&1 &
    F_SLAVE=$!
    J_SLAVE_DIR="$W/j-slave"
    HEAP_MIN=${SLAVE_HEAP:-2g} HEAP_MAX=${SLAVE_HEAP:-2g} DIRECT_MAX=15g READY_TIMEOUT_S=600 \
        "$RUN_APACHE" broker --port "$js_port" --namesrv "127.0.0.1:$J_NS_PORT" --dir "$J_SLAVE_DIR" \
        --role SLAVE --set mappedFileSizeCommitLog=1073741824 --set brokerIP2=127.0.0.1 \
        > /dev/null 2> "$W/j-slave.err" || { cat "$W/j-slave.err" >&2; exit 1; }
    sleep 20 # each slave finds its master through its name server and links
    warm_up
    compare replication "${send_opts[@]}" --size 1024
    wipe_both
    start_both
    warm_up
}

row_drain() {
    local i ns label pid
    wipe_both; start_both; warm_up
    for i in 1 2; do
        for ns in "$F_NS_PORT" "$J_NS_PORT"; do
            [[ $ns == "$F_NS_PORT" ]] && { label=ferrocket; pid=$F_BR; } || { label=java; pid=$J_PID; }
            timeout 600 "$BENCH" produce -n "127.0.0.1:$ns" --topic "Drain$i" --size 1024 --connections 4 \
                --inflight 64 --messages "$PRELOAD" --duration 600 --warmup 0 --quiet \
                > "$W/drain-fill-$label-$i.txt" 2>&1
            echo "== drain $label round $i ($PRELOAD messages, pages cached): load $(cut -d' ' -f1-3 /proc/loadavg)"
            timeout 600 "$BENCH" consume -n "127.0.0.1:$ns" --topic "Drain$i" --no-create-topic \
                --consumer-group "cg-drain-$i" --size 1024 --preload 0 --from-start --pull-batch 32 \
                --consumer-connections 2 --broker-pid "$pid" --duration "$DRAIN_SECS" --quiet \
                > "$W/drain-$label-$i.txt" 2>&1
            grep -E "throughput|pull |broker cpu|errors|rror" "$W/drain-$label-$i.txt" | head -6
        done
    done
}

row_startup() {
    local i
    for i in 1 2 3; do
        wipe_both
        start_both
    done
}
row_recovery() {
    local n=$((RECOVERY_GIB * 1024 * 1024))
    wipe_both; start_both
    echo "== recovery: writing $RECOVERY_GIB GiB to each"
    for ns in "$F_NS_PORT" "$J_NS_PORT"; do
        timeout 3600 "$BENCH" produce -n "127.0.0.1:$ns" --topic Recovery --size 1024 --connections 4 \
            --inflight 64 --messages "$n" --duration 3600 --warmup 0 --quiet > "$W/recovery-fill-$ns.txt" 2>&1
        grep -E "throughput|errors" "$W/recovery-fill-$ns.txt" | head -2
    done
    kill9_both
    start_ferrocket
    start_java
    echo "recovery after kill -9 (exec to the first answer): ferrocket $F_UP_S s, java $J_UP_S s"
    grep -E "recovered|Recover" "$W/f-broker.log" | tail -2
    grep -hE "recover" "$J_DIR"/logs/rocketmqlogs/store.log 2>/dev/null | tail -3
}

uptime
echo "ferrocket: $("$ROOT/$FERROCKET" --version 2>&1 | head -1) ($(git log -1 --format=%h)); java: $(java -version 2>&1 | head -1)"
start_namesrvs
for row in "${ROWS[@]}"; do
    "row_$row"
done
