#!/usr/bin/env bash
# The broker-side cost of ACL 2.0 on the send path: two brokers on this host,
# A with authenticationEnabled and authorizationEnabled, B without, the same
# signed requests to both (a normal user whose ACL allows Pub on the topic, so
# every send's signature and ACL are checked on A and ignored by B),
# interleaved rounds. Stops everything it started by pid and deletes the stores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
W=/tmp/ferrocket-acl2-cost
rm -rf "$W"; mkdir -p "$W"
$B namesrv --listen-port 19895 --set kvConfigPath="$W/ns1/kv.json" > "$W/ns1.log" 2>&1 & NS1=$!
$B namesrv --listen-port 19896 --set kvConfigPath="$W/ns2/kv.json" > "$W/ns2.log" 2>&1 & NS2=$!
sleep 1
$B broker --listen-port 20961 -n 127.0.0.1:19895 --store-path-root-dir "$W/a" \
  --set authenticationEnabled=true --set authorizationEnabled=true \
  --set 'initAuthenticationUser={"username":"root","password":"rootSecret"}' > "$W/a.log" 2>&1 & BA=$!
$B broker --listen-port 20965 -n 127.0.0.1:19896 --store-path-root-dir "$W/b" > "$W/b.log" 2>&1 & BB=$!
trap 'kill $BA $BB 2>/dev/null || true; sleep 3; kill $NS1 $NS2 2>/dev/null || true; wait; rm -rf "$W/a" "$W/b"' EXIT
sleep 4
ROOT=(--access-key root --secret-key rootSecret)
for ns in 19895 19896; do
  $B admin -n 127.0.0.1:$ns "${ROOT[@]}" topic create -t BenchTopic -r 8 -w 8 > /dev/null
done
$B admin -n 127.0.0.1:19895 "${ROOT[@]}" user create -b 127.0.0.1:20961 -u bench -p benchSecret > /dev/null
$B admin -n 127.0.0.1:19895 "${ROOT[@]}" acl create -b 127.0.0.1:20961 -s User:bench \
  -r Topic:BenchTopic -a Pub -d Allow > /dev/null
uptime
timeout 200 target/release/ferrocket-bench compare \
  --namesrv-a 127.0.0.1:19895 --label-a acl2-on --namesrv-b 127.0.0.1:19896 --label-b acl2-off \
  --broker-pid-a $BA --broker-pid-b $BB --no-create-topic \
  --access-key bench --secret-key benchSecret \
  --connections 4 --inflight 64 --header-encoding json --size "${SIZE:-1024}" \
  --rounds "${ROUNDS:-5}" --round-secs 5 --out "$W/report" --quiet 2>&1 | tail -32
