#!/usr/bin/env bash
# Send latency at half the maximum rate (performance pass 3, item 5), with
# the ceiling (`ferrocket-bench ceiling`, a null broker) measured at the same
# rate in the same run: first the saturated rate of one broker, then sends
# paced at half of it against the broker and the ceiling, for JSON and
# binary headers. Stops everything it started by pid and deletes the store.
#
#   tuning/half-rate.sh          # SHARDS=1 SIZE=1024 SECS=10
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
BENCH=target/release/ferrocket-bench
W=$(mktemp -d /tmp/ferrocket-half.XXXXXX)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
NS_PORT=$(port); BR_PORT=$(port); HA_PORT=$(port)
$B namesrv --listen-port "$NS_PORT" --set kvConfigPath="$W/ns/kv.json" > "$W/ns.log" 2>&1 & NS=$!
sleep 1
$B broker --shards "${SHARDS:-1}" --listen-port "$BR_PORT" -n "127.0.0.1:$NS_PORT" \
  --store-path-root-dir "$W/store" --set haListenPort="$HA_PORT" > "$W/broker.log" 2>&1 & BR=$!
trap 'kill $BR 2>/dev/null || true; sleep 3; kill $NS 2>/dev/null || true; wait; rm -rf "$W/store"' EXIT
sleep 4
uptime
COMMON=(-n "127.0.0.1:$NS_PORT" --broker-pid "$BR" --connections 4 --inflight 64 --driver raw
  --size "${SIZE:-1024}" --duration "${SECS:-10}" --quiet)
# msgs/s, broker CPU-µs per message and send p50 / p99 of each target in a report.
summary() {
  python3 - "$1" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
for t in report["targets"]:
    lat, cpu = t["request_latency"], t["broker_cpu"] or {}
    print(f'  {t["label"]:>40}: {t["msgs_per_s"]:>10,.0f} msg/s, '
          f'{cpu.get("cpu_us_per_msg", float("nan")):.2f} CPU-us/msg, '
          f'send p50 {lat["p50_us"] / 1000:.2f} ms, p99 {lat["p99_us"] / 1000:.2f} ms')
EOF
}
for encoding in json rocketmq; do
  echo "== $encoding headers, ${SIZE:-1024} B bodies: saturated"
  $BENCH produce "${COMMON[@]}" --header-encoding $encoding --out "$W/max-$encoding" > /dev/null
  summary "$W/max-$encoding/report.json"
  RATE=$(python3 -c "import json; print(int(json.load(open('$W/max-$encoding/report.json'))['targets'][0]['msgs_per_s'] / 2))")
  echo "== $encoding headers: paced at $RATE msg/s (half), the ceiling at the same rate"
  $BENCH produce "${COMMON[@]}" --header-encoding $encoding --rate "$RATE" --with-ceiling \
    --out "$W/half-$encoding" > /dev/null
  summary "$W/half-$encoding/report.json"
done
echo "reports: $W"
