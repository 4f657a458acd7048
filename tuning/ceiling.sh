#!/usr/bin/env bash
# Ferrocket against the ceiling (a null broker: `ferrocket-bench ceiling`)
# in one run: brokers of 1 and 2 shards on this host, compared in interleaved
# rounds, with `--with-ceiling` running the same sends against the null
# broker in every round. JSON headers, then binary headers. Stops everything
# it started by pid and deletes the stores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
W=/tmp/ferrocket-ceiling
rm -rf "$W"; mkdir -p "$W"
$B namesrv --listen-port 19895 --set kvConfigPath="$W/ns1/kv.json" > "$W/ns1.log" 2>&1 & NS1=$!
$B namesrv --listen-port 19896 --set kvConfigPath="$W/ns2/kv.json" > "$W/ns2.log" 2>&1 & NS2=$!
sleep 1
$B broker --shards 1 --listen-port 20961 -n 127.0.0.1:19895 --store-path-root-dir "$W/a" \
  --set haListenPort=20962 > "$W/a.log" 2>&1 & BA=$!
$B broker --shards 2 --listen-port 20965 -n 127.0.0.1:19896 --store-path-root-dir "$W/b" \
  --set haListenPort=20966 > "$W/b.log" 2>&1 & BB=$!
trap 'kill $BA $BB 2>/dev/null || true; sleep 3; kill $NS1 $NS2 2>/dev/null || true; wait; rm -rf "$W/a" "$W/b"' EXIT
sleep 4
uptime
for encoding in json rocketmq; do
  echo "== $encoding headers, ${SIZE:-1024} B bodies"
  timeout 300 target/release/ferrocket-bench compare \
    --namesrv-a 127.0.0.1:19895 --label-a 1-shard --namesrv-b 127.0.0.1:19896 --label-b 2-shards \
    --broker-pid-a $BA --broker-pid-b $BB --with-ceiling \
    --connections 4 --inflight 64 --header-encoding $encoding --size "${SIZE:-1024}" --driver raw \
    --rounds "${ROUNDS:-3}" --round-secs 5 --out "$W/report-$encoding" --quiet 2>&1 | tail -40
done
