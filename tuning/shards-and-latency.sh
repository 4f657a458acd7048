#!/usr/bin/env bash
# 1 vs 2 shards on an idle host: send latency at a fixed 38k msg/s and e2e at 20k msg/s
# (edit the --rate values for other points); stops everything by pid.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
rm -rf /tmp/idle; mkdir -p /tmp/idle
$B namesrv --listen-port 19897 --set kvConfigPath=/tmp/idle/ns1/kvConfig.json > /tmp/idle/ns1.log 2>&1 & NS1=$!
$B namesrv --listen-port 19898 --set kvConfigPath=/tmp/idle/ns2/kvConfig.json > /tmp/idle/ns2.log 2>&1 & NS2=$!
sleep 1
$B broker --listen-port 20971 -n 127.0.0.1:19897 --store-path-root-dir /tmp/idle/a --shards 1 > /tmp/idle/a.log 2>&1 & BA=$!
$B broker --listen-port 20975 -n 127.0.0.1:19898 --store-path-root-dir /tmp/idle/b --shards 2 > /tmp/idle/b.log 2>&1 & BB=$!
sleep 4; uptime
timeout 100 target/release/ferrocket-bench compare --rate 38000 --namesrv-a 127.0.0.1:19897 --label-a 1-shard --namesrv-b 127.0.0.1:19898 --label-b 2-shards \
  --broker-pid-a $BA --broker-pid-b $BB --inflight 128 --header-encoding rocketmq --rounds 3 --round-secs 5 --out /tmp/idle/r1 --quiet 2>&1 | sed -n '/== compare/,$p'
timeout 100 target/release/ferrocket-bench compare --workload e2e --rate 20000 --namesrv-a 127.0.0.1:19897 --label-a 1-shard --namesrv-b 127.0.0.1:19898 --label-b 2-shards \
  --broker-pid-a $BA --broker-pid-b $BB --header-encoding rocketmq --rounds 3 --round-secs 5 --out /tmp/idle/r2 --quiet 2>&1 | sed -n '/== compare/,$p'
kill $BA $BB; sleep 3; kill $NS1 $NS2; wait
# The stores preallocate 1 GiB segments; keep only logs and reports.
rm -rf /tmp/idle/a /tmp/idle/b
