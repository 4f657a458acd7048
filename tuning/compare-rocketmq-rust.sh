#!/usr/bin/env bash
# Ferrocket against the rocketmq-rust broker 1.0.0 (scripts/peers/), same host,
# same harness, same workload, one interleaved compare run; stops everything by pid.
# Extra ferrocket-bench options may follow, e.g. --header-encoding json --size 1024.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
DIR=$(mktemp -d /tmp/ferrocket-compare.XXXXXX)
$B namesrv --listen-port 19895 --set "kvConfigPath=$DIR/ns/kvConfig.json" > "$DIR/ns.log" 2>&1 & NS=$!
sleep 1
$B broker --listen-port 20951 -n 127.0.0.1:19895 --store-path-root-dir "$DIR/store" ${SHARDS:+--shards $SHARDS} > "$DIR/broker.log" 2>&1 & BR=$!
eval "$(scripts/peers/run-rocketmq-rust.sh --namesrv-port 29896 --broker-port 30961 --dir "$DIR/peer")"
sleep 8
uptime
timeout 300 target/release/ferrocket-bench compare --namesrv-a 127.0.0.1:19895 --label-a ferrocket --broker-pid-a $BR \
  --namesrv-b "$ROCKETMQ_RUST_NAMESRV" --label-b rocketmq-rust --broker-pid-b "$ROCKETMQ_RUST_BROKER_PID" \
  --rounds 3 --round-secs 5 --out "$DIR/report" "$@" 2>&1 | tail -32
scripts/peers/run-rocketmq-rust.sh stop --dir "$ROCKETMQ_RUST_DIR"
kill $BR; sleep 3; kill $NS; wait
# The store preallocates 1 GiB segments; keep only logs and the report.
rm -rf "$DIR/store" "$DIR/peer/store"
echo "logs and report: $DIR"
