#!/usr/bin/env bash
# The broker-side cost of the Prometheus metrics on the send path: two brokers
# on this host, A with metricsExporterType=PROM (and scraped every 5 s while
# the load runs, as a Prometheus server would, only more often), B without;
# the same load to both, interleaved rounds. Stops everything it started by
# pid and deletes the stores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
W=/tmp/ferrocket-metrics-cost
rm -rf "$W"; mkdir -p "$W"
$B namesrv --listen-port 19895 --set kvConfigPath="$W/ns1/kv.json" > "$W/ns1.log" 2>&1 & NS1=$!
$B namesrv --listen-port 19896 --set kvConfigPath="$W/ns2/kv.json" > "$W/ns2.log" 2>&1 & NS2=$!
sleep 1
$B broker --listen-port 20961 -n 127.0.0.1:19895 --store-path-root-dir "$W/a" \
  --set metricsExporterType=PROM --set metricsPromExporterPort=20969 > "$W/a.log" 2>&1 & BA=$!
$B broker --listen-port 20965 -n 127.0.0.1:19896 --store-path-root-dir "$W/b" > "$W/b.log" 2>&1 & BB=$!
SCRAPER=
trap 'kill $SCRAPER $BA $BB 2>/dev/null || true; sleep 3; kill $NS1 $NS2 2>/dev/null || true; wait; rm -rf "$W/a" "$W/b"' EXIT
sleep 4
for ns in 19895 19896; do
  $B admin -n 127.0.0.1:$ns topic create -t BenchTopic -r 8 -w 8 > /dev/null
done
( while sleep 5; do
    curl -s -o /dev/null -w '%{time_total}\n' http://127.0.0.1:20969/metrics >> "$W/scrapes.txt" || true
  done ) & SCRAPER=$!
uptime
timeout 200 target/release/ferrocket-bench compare \
  --namesrv-a 127.0.0.1:19895 --label-a metrics-on --namesrv-b 127.0.0.1:19896 --label-b metrics-off \
  --broker-pid-a $BA --broker-pid-b $BB --no-create-topic \
  --connections 4 --inflight 64 --header-encoding json --size "${SIZE:-1024}" \
  --rounds "${ROUNDS:-5}" --round-secs 5 --out "$W/report" --quiet 2>&1 | tail -32
echo "scrape time under load, seconds (min / median / max of $(wc -l < "$W/scrapes.txt")):" \
  "$(sort -n "$W/scrapes.txt" | awk '{a[NR]=$1} END {print a[1], a[int((NR+1)/2)], a[NR]}')"
curl -s http://127.0.0.1:20969/metrics | grep -E '^rocketmq_messages_in_total|^rocketmq_rpc_latency_milliseconds_count' | head -5
