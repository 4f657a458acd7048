#!/usr/bin/env bash
# Tiered storage's cost (release build, default shard count, 1 KiB,
# 64 MiB CommitLog segments):
#  1. send throughput on a broker without tiering, then on one offloading
#     while it takes the sends (posix provider on the same disk, uploads
#     every second, local budget 128 MiB: older segments leave the disk);
#  2. catch-up consumption from offset 0 (`consume --from-start`): from
#     object storage (every segment but the newest two is offloaded and
#     gone locally) against from the local disk, each broker restarted and
#     the page cache dropped (root) first.
# Every process is stopped by pid; the stores are deleted at the end.
#
#   tuning/tiered.sh             # MESSAGES=300000 DRAIN_SECS=30
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
BENCH=${BENCH:-target/release/ferrocket-bench}
MESSAGES=${MESSAGES:-300000}
DRAIN_SECS=${DRAIN_SECS:-30}
SEGMENT=$((64 * 1024 * 1024))
W=$(mktemp -d /tmp/ferrocket-tiered.XXXXXX)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
NS_PORT=$(port); BR_PORT=$(port); HA_PORT=$(port)
NS_ADDR="127.0.0.1:$NS_PORT"
BR=""
# start_broker STORE [--set KEY=VALUE ...]
start_broker() {
  local store=$1; shift
  $B broker --listen-addr 127.0.0.1 --listen-port "$BR_PORT" -n "$NS_ADDR" --store-path-root-dir "$store" \
    --set "haListenPort=$HA_PORT" --set diskMaxUsedSpaceRatio=100 --set diskSpaceCleanForciblyRatio=100 \
    --set "mappedFileSizeCommitLog=$SEGMENT" "$@" >> "$W/broker.log" 2>&1 &
  BR=$!
  sleep 3
}
stop_broker() { kill "$BR" 2>/dev/null; wait "$BR" 2>/dev/null; }
TIER=(--set tieredStorageLevel=NOT_IN_DISK --set tieredBackendServiceProvider=posix
  --set "tieredStoreFilePath=$W/remote" --set tieredStoreUploadIntervalMs=1000
  --set "tieredStoreLocalMaxBytes=$((2 * SEGMENT))" --set cleanResourceInterval=1000)
$B namesrv --listen-addr 127.0.0.1 --listen-port "$NS_PORT" --set "kvConfigPath=$W/ns/kvConfig.json" > "$W/ns.log" 2>&1 & NS=$!
cleanup() { stop_broker; kill "$NS" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
sleep 1
uptime
produce() { # produce TOPIC
  timeout 300 $BENCH produce -n "$NS_ADDR" --topic "$1" --messages "$MESSAGES" --size 1024 --warmup 0 \
    --broker-pid "$BR" --quiet 2>&1 | tail -15
}
drop_cache() {
  sync
  if echo 1 > /proc/sys/vm/drop_caches 2>/dev/null; then echo "(page cache dropped)"; else echo "(not root: page cache kept)"; fi
}
drain() { # drain TOPIC
  timeout 300 $BENCH consume -n "$NS_ADDR" --topic "$1" --consumer-group "cg-$1-$RANDOM" --size 1024 \
    --pull-batch 32 --consumer-connections 2 --broker-pid "$BR" --duration "$DRAIN_SECS" --quiet \
    --preload 0 --from-start --no-create-topic 2>&1 | tail -15
}

echo "== send, no tiering"
start_broker "$W/local"
produce Local
stop_broker
echo "== send, offload running"
start_broker "$W/tiered" "${TIER[@]}"
produce Tiered
# Wait for the uploads and the local drops to finish.
for _ in $(seq 1 120); do
  local_segments=$(ls "$W/tiered/commitlog" | wc -l)
  [ "$local_segments" -le 3 ] && break
  sleep 1
done
echo "(local segments now $(ls "$W/tiered/commitlog" | wc -l), offloaded $(ls "$W/remote/commitlog" | wc -l))"
stop_broker

echo "== catch-up from the local disk"
drop_cache
start_broker "$W/local"
drain Local
stop_broker
echo "== catch-up from object storage (posix provider)"
drop_cache
start_broker "$W/tiered" "${TIER[@]}"
drain Tiered
grep -c "segment offloaded and verified" "$W/broker.log" | sed 's/^/(uploads logged: /; s/$/)/'
stop_broker
