#!/usr/bin/env bash
# The broker-side cost of ACL 1.0 on the send path: two brokers on this host,
# A with aclEnable=true, B without, the same signed requests to both (a normal
# account, so every send's permissions are checked), interleaved rounds.
# Stops everything it started by pid and deletes the stores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
W=/tmp/ferrocket-acl-cost
rm -rf "$W"; mkdir -p "$W/home/conf"
cat > "$W/home/conf/plain_acl.yml" <<'YAML'
accounts:
  - accessKey: benchAccess
    secretKey: benchSecret
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: ["BenchTopic=PUB|SUB"]
  - accessKey: adminAccess
    secretKey: adminSecret
    admin: true
YAML
$B namesrv --listen-port 19893 --set kvConfigPath="$W/ns1/kv.json" > "$W/ns1.log" 2>&1 & NS1=$!
$B namesrv --listen-port 19894 --set kvConfigPath="$W/ns2/kv.json" > "$W/ns2.log" 2>&1 & NS2=$!
sleep 1
$B broker --listen-port 20951 -n 127.0.0.1:19893 --store-path-root-dir "$W/a" \
  --set aclEnable=true --set rocketmqHome="$W/home" > "$W/a.log" 2>&1 & BA=$!
$B broker --listen-port 20955 -n 127.0.0.1:19894 --store-path-root-dir "$W/b" > "$W/b.log" 2>&1 & BB=$!
trap 'kill $BA $BB 2>/dev/null || true; sleep 3; kill $NS1 $NS2 2>/dev/null || true; wait; rm -rf "$W/a" "$W/b"' EXIT
sleep 4
for ns in 19893 19894; do
  $B admin -n 127.0.0.1:$ns --access-key adminAccess --secret-key adminSecret \
    topic create -t BenchTopic -r 8 -w 8 > /dev/null
done
uptime
timeout 200 target/release/ferrocket-bench compare \
  --namesrv-a 127.0.0.1:19893 --label-a acl-on --namesrv-b 127.0.0.1:19894 --label-b acl-off \
  --broker-pid-a $BA --broker-pid-b $BB --no-create-topic \
  --access-key benchAccess --secret-key benchSecret \
  --connections 4 --inflight 64 --header-encoding json --size "${SIZE:-1024}" \
  --rounds "${ROUNDS:-5}" --round-secs 5 --out "$W/report" --quiet 2>&1 | tail -32
