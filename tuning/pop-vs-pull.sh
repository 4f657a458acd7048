#!/usr/bin/env bash
# Pop + batch ack against pull on one broker (release build), interleaved:
# pull, pop, pull, pop, each draining a fresh 200,000-message preload of 1 KiB
# with a new consumer group; then the pop log's bytes per message.
# Every process is stopped by pid; the store is deleted at the end.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
BENCH=target/release/ferrocket-bench
W=/tmp/pop-bench; rm -rf $W; mkdir -p $W
$B namesrv --listen-port 19951 --set "kvConfigPath=$W/ns/kvConfig.json" > $W/ns.log 2>&1 & NS=$!
sleep 1
$B broker --listen-port 20951 -n 127.0.0.1:19951 --store-path-root-dir $W/store --shards 1 \
  --set haListenPort=20952 --set diskMaxUsedSpaceRatio=100 --set diskSpaceCleanForciblyRatio=100 > $W/broker.log 2>&1 & BR=$!
sleep 3
uptime
for round in 1 2; do
  for mode in pull pop; do
    flag=""; [[ $mode == pop ]] && flag="--pop"
    echo "== round $round: $mode"
    timeout 120 $BENCH consume -n 127.0.0.1:19951 --topic "Drain$mode$round" --consumer-group "cg-$mode-$round" \
      --preload 200000 --size 1024 --pull-batch 32 --consumer-connections 2 --broker-pid $BR --duration 30 \
      $flag --quiet 2>&1 | grep -E "throughput|pull |broker cpu|errors" | head -5
  done
done
echo "pop log: $(du -b $W/store/pop | tail -1)"
kill $BR; sleep 3; kill $NS; wait 2>/dev/null
rm -rf $W/store
