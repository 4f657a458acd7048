#!/usr/bin/env bash
# The broker-side cost of TLS on the send path: two identical brokers on
# this host (Java's default tls.server.mode=permissive, test mode's
# self-signed certificate), the same workload to both, A over TLS and B in
# plaintext, interleaved rounds. Stops everything it started by pid and
# deletes the stores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
W=/tmp/ferrocket-tls-cost
rm -rf "$W"; mkdir -p "$W"
$B namesrv --listen-port 19895 --set kvConfigPath="$W/ns1/kv.json" > "$W/ns1.log" 2>&1 & NS1=$!
$B namesrv --listen-port 19896 --set kvConfigPath="$W/ns2/kv.json" > "$W/ns2.log" 2>&1 & NS2=$!
sleep 1
$B broker --listen-port 20961 -n 127.0.0.1:19895 --store-path-root-dir "$W/a" \
  --set haListenPort=20962 > "$W/a.log" 2>&1 & BA=$!
$B broker --listen-port 20965 -n 127.0.0.1:19896 --store-path-root-dir "$W/b" \
  --set haListenPort=20966 > "$W/b.log" 2>&1 & BB=$!
trap 'kill $BA $BB 2>/dev/null || true; sleep 3; kill $NS1 $NS2 2>/dev/null || true; wait; rm -rf "$W/a" "$W/b"' EXIT
sleep 4
for ns in 19895 19896; do
  $B admin -n 127.0.0.1:$ns topic create -t BenchTopic -r 8 -w 8 > /dev/null
done
uptime
timeout 200 target/release/ferrocket-bench compare \
  --namesrv-a 127.0.0.1:19895 --label-a tls --tls-a --namesrv-b 127.0.0.1:19896 --label-b plaintext \
  --broker-pid-a $BA --broker-pid-b $BB --no-create-topic \
  --connections 4 --inflight 64 --header-encoding json --size "${SIZE:-1024}" \
  --rounds "${ROUNDS:-5}" --round-secs 5 --out "$W/report" --quiet 2>&1 | tail -32
