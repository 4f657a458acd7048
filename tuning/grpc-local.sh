#!/usr/bin/env bash
# The in-broker gRPC endpoint in its two modes: two brokers of one shard on
# this host, both with enableProxy=true, A calling its shard in process
# (proxyMode=local), B over loopback Remoting (proxyMode=cluster); the same
# `ferrocket-bench grpc` run against each broker's own port, interleaved
# rounds (a fresh topic and group each). Stops everything it started by pid
# and deletes the stores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
W=/tmp/ferrocket-grpc-local
rm -rf "$W"; mkdir -p "$W"
$B namesrv --listen-port 19895 --set kvConfigPath="$W/ns1/kv.json" > "$W/ns1.log" 2>&1 & NS1=$!
$B namesrv --listen-port 19896 --set kvConfigPath="$W/ns2/kv.json" > "$W/ns2.log" 2>&1 & NS2=$!
sleep 1
$B broker --shards 1 --listen-port 20961 -n 127.0.0.1:19895 --store-path-root-dir "$W/a" \
  --set haListenPort=20962 --set enableProxy=true --set proxyMode=local > "$W/a.log" 2>&1 & BA=$!
$B broker --shards 1 --listen-port 20965 -n 127.0.0.1:19896 --store-path-root-dir "$W/b" \
  --set haListenPort=20966 --set enableProxy=true --set proxyMode=cluster > "$W/b.log" 2>&1 & BB=$!
trap 'kill $BA $BB 2>/dev/null || true; sleep 3; kill $NS1 $NS2 2>/dev/null || true; wait; rm -rf "$W/a" "$W/b"' EXIT
sleep 4
uptime
for round in $(seq 1 "${ROUNDS:-3}"); do
  for side in local:19895:20961:$BA cluster:19896:20965:$BB; do
    IFS=: read -r mode ns port pid <<< "$side"
    topic="GrpcBench$round"
    $B admin -n 127.0.0.1:$ns topic create -t "$topic" -r 8 -w 8 > /dev/null
    echo "== round $round, proxyMode=$mode"
    timeout 120 target/release/ferrocket-bench grpc --endpoint 127.0.0.1:$port --topic "$topic" \
      --group "bench-$round" --duration "${SECS:-10}" --inflight 64 --consumers 8 \
      --body-bytes "${SIZE:-1024}" --pid "$pid" 2>&1 | tail -4
  done
done
