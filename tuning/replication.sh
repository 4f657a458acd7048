#!/usr/bin/env bash
# Replication on one host, in one run (release build):
#  1. 1 KiB produce, interleaved: ASYNC_MASTER + slave vs SYNC_MASTER + slave;
#  2. the replication lag under full ASYNC_MASTER load (bytes and ms);
#  3. how long a slave that was stopped takes to catch up CATCH_UP_MIB of CommitLog.
# Every process is stopped by pid; the stores are deleted at the end.
#   tuning/replication.sh            (CATCH_UP_MIB=1024 by default)
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
BENCH=target/release/ferrocket-bench
W=/tmp/ha-bench; rm -rf $W; mkdir -p $W
PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null; sleep 2; kill -9 "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf $W/*/store; }
trap cleanup EXIT

namesrv() { $B namesrv --listen-port "$1" --set "kvConfigPath=$W/ns-$1/kvConfig.json" > "$W/ns-$1.log" 2>&1 & PIDS+=($!); }
# broker NAME PORT HA_PORT NAMESRV_PORT ROLE [extra --set ...]; NAME's part
# before the last '-' is the brokerName (async-m and async-s: async).
broker() {
  local name=$1 port=$2 ha=$3 ns=$4 role=$5; shift 5
  local id=0; [[ $role == SLAVE ]] && id=1
  $B broker --listen-port "$port" -n "127.0.0.1:$ns" --store-path-root-dir "$W/$name/store" --shards 1 \
    --broker-name "${name%-*}" --set "brokerId=$id" --set "brokerRole=$role" --set "haListenPort=$ha" \
    --set slaveReadEnable=true --set diskMaxUsedSpaceRatio=100 --set diskSpaceCleanForciblyRatio=100 \
    "$@" > "$W/$name.log" 2>&1 &
  LAST=$!; PIDS+=($LAST)
}

namesrv 19931; namesrv 19932; sleep 1
broker async-m 20931 20932 19931 ASYNC_MASTER; AM=$LAST
broker sync-m 20941 20942 19932 SYNC_MASTER; SM=$LAST
sleep 2
broker async-s 20935 20936 19931 SLAVE; AS=$LAST
broker sync-s 20945 20946 19932 SLAVE; SS=$LAST
sleep 4
uptime
echo "== 1. 1 KiB produce: ASYNC_MASTER vs SYNC_MASTER (a slave each, same host)"
timeout 200 $BENCH compare --namesrv-a 127.0.0.1:19931 --label-a async-master --namesrv-b 127.0.0.1:19932 --label-b sync-master \
  --broker-pid-a $AM --broker-pid-b $SM --connections 4 --inflight 64 --size 1024 \
  --rounds 3 --round-secs 5 --out $W/compare --quiet 2>&1 | tail -25

echo "== 2. replication lag under full ASYNC_MASTER load"
python3 tuning/ha_sample.py 127.0.0.1:20931 14 & SAMPLER=$!
timeout 60 $BENCH produce -n 127.0.0.1:19931 --topic LagTopic --connections 4 --inflight 64 --size 1024 \
  --duration 15 --warmup 0 --quiet 2>&1 | grep -E "throughput|send ack" | head -3
wait $SAMPLER

echo "== 3. a stopped slave catches up ${CATCH_UP_MIB:-1024} MiB"
kill $AS; wait $AS 2>/dev/null
MESSAGES=$(( ${CATCH_UP_MIB:-1024} * 1024 ))
timeout 600 $BENCH produce -n 127.0.0.1:19931 --topic CatchUp --connections 4 --inflight 64 --size 1024 \
  --messages $MESSAGES --duration 600 --warmup 0 --quiet 2>&1 | grep -E "throughput" | head -1
end_of() { python3 - "$1" <<'PY'
import json, sys
sys.path.insert(0, "tests/interop")
from remoting import RemotingConnection
c = RemotingConnection(sys.argv[1]); _, body = c.request(28, {}); c.close()
print(json.loads(body)["table"]["commitLogMaxOffset"])
PY
}
MASTER_END=$(end_of 127.0.0.1:20931)
START=$(date +%s.%N)
broker async-s 20935 20936 19931 SLAVE; AS=$LAST
until SLAVE_END=$(end_of 127.0.0.1:20935 2>/dev/null); do sleep 0.1; done
BEHIND=$(( MASTER_END - SLAVE_END ))
until [[ "$(end_of 127.0.0.1:20935 2>/dev/null)" == "$MASTER_END" ]]; do sleep 0.2; done
END=$(date +%s.%N)
echo "caught up $(( BEHIND / 1048576 )) MiB (to offset $MASTER_END) in $(echo "$END - $START" | bc) s, including the slave's start"
