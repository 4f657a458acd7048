#!/usr/bin/env bash
# Interleaved async vs sync flush (and 128 B vs 1 KiB) on one host, then stop everything by pid.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
rm -rf /tmp/sf; mkdir -p /tmp/sf
$B namesrv --listen-port 19891 --set kvConfigPath=/tmp/sf/ns1/kvConfig.json > /tmp/sf/ns1.log 2>&1 & NS1=$!
$B namesrv --listen-port 19892 --set kvConfigPath=/tmp/sf/ns2/kvConfig.json > /tmp/sf/ns2.log 2>&1 & NS2=$!
sleep 1
$B broker --listen-port 20941 -n 127.0.0.1:19891 --store-path-root-dir /tmp/sf/a --shards 1 --flush-disk-type ASYNC_FLUSH > /tmp/sf/a.log 2>&1 & BA=$!
$B broker --listen-port 20945 -n 127.0.0.1:19892 --store-path-root-dir /tmp/sf/b --shards 1 --flush-disk-type SYNC_FLUSH > /tmp/sf/b.log 2>&1 & BB=$!
sleep 4
uptime
timeout 150 target/release/ferrocket-bench compare --namesrv-a 127.0.0.1:19891 --label-a async --namesrv-b 127.0.0.1:19892 --label-b sync \
  --broker-pid-a $BA --broker-pid-b $BB --connections 4 --inflight 64 --header-encoding rocketmq --size "${SIZE:-1024}" \
  --rounds 3 --round-secs 5 --out /tmp/sf/report --quiet 2>&1 | tail -30
kill $BA $BB; sleep 3; kill $NS1 $NS2; wait
# The stores preallocate 1 GiB segments; keep only logs and reports.
rm -rf /tmp/sf/a /tmp/sf/b
