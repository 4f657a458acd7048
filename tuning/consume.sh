#!/usr/bin/env bash
# Consumption on one broker (release build, default shard count), 1 KiB:
#  1. e2e at RATE msg/s with 8 and with 64 consumer connections (first: a
#     drain writes gigabytes, and the memory it takes slows what follows);
#  2. pull, keeping up: drain fresh preloads while their pages are cached,
#     for DRAIN_SECS;
#  3. pull, catching up: produce PRELOAD messages, stop the broker, drop the
#     page cache (root; the broker maps its segments, so they must be
#     unmapped first), start it again on the same store and drain the topic
#     from its start (`consume --from-start`): the reads come from the disk.
#     Last, because on a VM that backs memory on first touch everything
#     after a cache drop runs slower for a while.
# Every process is stopped by pid; the store is deleted at the end.
#
#   tuning/consume.sh            # PRELOAD=400000 RATE=20000 SECS=20 DRAIN_SECS=5
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
BENCH=target/release/ferrocket-bench
PRELOAD=${PRELOAD:-400000}
RATE=${RATE:-20000}
SECS=${SECS:-20}
DRAIN_SECS=${DRAIN_SECS:-5}
W=$(mktemp -d /tmp/ferrocket-consume.XXXXXX)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
NS_PORT=$(port); BR_PORT=$(port); HA_PORT=$(port)
NS_ADDR="127.0.0.1:$NS_PORT"
BR=""
start_broker() {
  $B broker --listen-addr 127.0.0.1 --listen-port "$BR_PORT" -n "$NS_ADDR" --store-path-root-dir "$W/store" \
    --set "haListenPort=$HA_PORT" --set diskMaxUsedSpaceRatio=100 --set diskSpaceCleanForciblyRatio=100 \
    >> "$W/broker.log" 2>&1 &
  BR=$!
  sleep 3
}
stop_broker() { kill "$BR" 2>/dev/null; wait "$BR" 2>/dev/null; }
$B namesrv --listen-addr 127.0.0.1 --listen-port "$NS_PORT" --set "kvConfigPath=$W/ns/kvConfig.json" > "$W/ns.log" 2>&1 & NS=$!
cleanup() { stop_broker; kill "$NS" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
sleep 1
start_broker
uptime
summary() { grep -E "throughput|pull |send ack|e2e\)|broker cpu|errors|rror" | head -6; }
consume() { # consume TOPIC [bench flags]
  local topic=$1; shift
  timeout 300 $BENCH consume -n "$NS_ADDR" --topic "$topic" --consumer-group "cg-$topic" --size 1024 \
    --pull-batch 32 --consumer-connections 2 --broker-pid "$BR" --duration "$DRAIN_SECS" --quiet "$@" 2>&1 | summary
}

for consumers in 8 64; do
  echo "== e2e at $RATE msg/s, $consumers consumer connections"
  timeout 300 $BENCH e2e -n "$NS_ADDR" --topic "E2e$consumers" --consumer-group "cg-e2e-$consumers" --rate "$RATE" \
    --size 1024 --consumer-connections "$consumers" --broker-pid "$BR" --duration "$SECS" --header-encoding rocketmq \
    --quiet 2>&1 | summary
done

echo "== pull, keeping up (page cache warm)"
consume KeepUp --preload "$PRELOAD"

echo "== pull, catching up (broker restarted, page cache dropped)"
timeout 300 $BENCH produce -n "$NS_ADDR" --topic CatchUp --messages "$PRELOAD" --size 1024 --warmup 0 --quiet 2>&1 \
  | grep -E "throughput|errors"
stop_broker
sync
if echo 1 > /proc/sys/vm/drop_caches 2>/dev/null; then
  echo "(page cache dropped: $(free -m | awk '/Mem:/ {print $6}') MiB of buffers and cache left)"
else
  echo "(cannot drop the page cache: not root; the drain below reads cached pages)"
fi
start_broker
consume CatchUp --preload 0 --from-start --no-create-topic
