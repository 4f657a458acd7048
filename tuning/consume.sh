#!/usr/bin/env bash
# Consumption on one broker (release build, default shard count), 1 KiB:
#  1. pull, keeping up: drain a fresh preload while its pages are cached;
#  2. pull, catching up: the same with the page cache dropped after each
#     preload (`--drop-page-cache`, needs root), so reads come from the disk;
#  3. e2e at RATE msg/s with 8 and with 64 consumer connections.
# Every process is stopped by pid; the store is deleted at the end.
#
#   tuning/consume.sh            # PRELOAD=400000 RATE=20000 SECS=20
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
BENCH=target/release/ferrocket-bench
PRELOAD=${PRELOAD:-400000}
RATE=${RATE:-20000}
SECS=${SECS:-20}
W=$(mktemp -d /tmp/ferrocket-consume.XXXXXX)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
NS_PORT=$(port); BR_PORT=$(port); HA_PORT=$(port)
$B namesrv --listen-addr 127.0.0.1 --listen-port "$NS_PORT" --set "kvConfigPath=$W/ns/kvConfig.json" > "$W/ns.log" 2>&1 & NS=$!
sleep 1
$B broker --listen-addr 127.0.0.1 --listen-port "$BR_PORT" -n "127.0.0.1:$NS_PORT" --store-path-root-dir "$W/store" \
  --set "haListenPort=$HA_PORT" --set diskMaxUsedSpaceRatio=100 --set diskSpaceCleanForciblyRatio=100 > "$W/broker.log" 2>&1 & BR=$!
cleanup() { kill "$BR" 2>/dev/null; sleep 3; kill "$NS" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
sleep 3
NS_ADDR="127.0.0.1:$NS_PORT"
uptime
summary() { grep -E "throughput|pull |send ack|e2e\)|broker cpu|errors" | head -6; }

drain() { # drain TOPIC [bench flags]: preload TOPIC, then measure pulling it back
  local topic=$1; shift
  timeout 300 $BENCH consume -n "$NS_ADDR" --topic "$topic" --consumer-group "cg-$topic" --preload "$PRELOAD" \
    --size 1024 --pull-batch 32 --consumer-connections 2 --broker-pid "$BR" --duration "$SECS" --quiet "$@" 2>&1 | summary
}

echo "== pull, keeping up (page cache warm)"
drain KeepUp

echo "== pull, catching up (page cache dropped after each preload)"
drain CatchUp --drop-page-cache

for consumers in 8 64; do
  echo "== e2e at $RATE msg/s, $consumers consumer connections"
  timeout 300 $BENCH e2e -n "$NS_ADDR" --topic "E2e$consumers" --consumer-group "cg-e2e-$consumers" --rate "$RATE" \
    --size 1024 --consumer-connections "$consumers" --broker-pid "$BR" --duration "$SECS" --header-encoding rocketmq \
    --quiet 2>&1 | summary
done
