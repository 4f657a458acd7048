#!/usr/bin/env bash
# Shard scaling on a many-core host (performance pass 3, item 7): for each
# shard count, one broker with its shards pinned to cores 1..N (core 0 left
# to the appender, interrupts and the name server) and the client pinned to
# the cores above them; then saturated produce with JSON and binary headers,
# e2e at a fixed rate, and the ceiling (`ferrocket-bench ceiling`, a null
# broker with N threads, pinned to the same cores as the shards) under the
# same produce workload; the e2e run measures the ceiling too (started by
# the bench with N threads, on the client's cores). Writes every report and
# a summary table under OUT;
# stops everything it started by pid and deletes each store.
#
#   tuning/scaling.sh                           # SHARD_COUNTS="1 2 4 8 16"
#   SHARD_COUNTS="1" SECS=5 tuning/scaling.sh   # what a 2-core host can run
#
# A count is skipped unless the host has a core for the client beyond the
# shards (N + 2 cores); SHARED=1 runs it on N + 1 with the client unpinned.
# Environment: SHARD_COUNTS, SECS (per measurement, default 10), SIZE
# (default 1024), E2E_RATE (default 20000), INFLIGHT (default 64),
# CONNECTIONS_PER_SHARD (default 4), OUT (default target/bench/scaling-TIME).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=target/release/ferrocket
BENCH=$PWD/target/release/ferrocket-bench
CORES=$(nproc)
SECS=${SECS:-10}
OUT=${OUT:-target/bench/scaling-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/ferrocket-scaling.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 50); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),1)" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "nothing listens on port $1" >&2; return 1
}

NS_PORT=$(port)
taskset -c 0 $B namesrv --listen-port "$NS_PORT" --set kvConfigPath="$W/ns/kv.json" > "$W/ns.log" 2>&1 &
PIDS+=($!)
wait_port "$NS_PORT"
echo "host: $CORES cores; $(uptime)"

for n in ${SHARD_COUNTS:-1 2 4 8 16}; do
  if (( n + 1 > CORES )) || { (( n + 2 > CORES )) && [ -z "${SHARED:-}" ]; }; then
    echo "== $n shards: skipped ($CORES cores: needs $((n + 2)), or $((n + 1)) with SHARED=1)"
    continue
  fi
  shard_cores=$(seq -s, 1 "$n")
  if (( n + 2 <= CORES )); then client=(taskset -c "$((n + 1))-$((CORES - 1))"); else client=(); fi
  common=(--connections "$(( ${CONNECTIONS_PER_SHARD:-4} * n ))" --inflight "${INFLIGHT:-64}"
    --size "${SIZE:-1024}" --duration "$SECS" --driver raw --quiet)
  # The ceiling: a null broker on the shards' cores, measured first.
  ceiling_port=$(port)
  taskset -c "$shard_cores" "$BENCH" ceiling --listen-port "$ceiling_port" --threads "$n" \
    > "$W/ceiling-$n.log" 2>&1 &
  ceiling_pid=$!; PIDS+=("$ceiling_pid")
  wait_port "$ceiling_port"
  for encoding in json rocketmq; do
    "${client[@]}" "$BENCH" produce -n "127.0.0.1:$ceiling_port" --broker-pid "$ceiling_pid" \
      --label "ceiling-$n" --header-encoding "$encoding" "${common[@]}" \
      --out "$OUT/ceiling-$encoding-$n" > /dev/null
  done
  kill "$ceiling_pid"; wait "$ceiling_pid" 2>/dev/null || true
  # The broker.
  broker_port=$(port)
  $B broker --shards "$n" --set shardCores="$shard_cores" --listen-port "$broker_port" \
    -n "127.0.0.1:$NS_PORT" --store-path-root-dir "$W/store-$n" --set haListenPort="$(port)" \
    > "$W/broker-$n.log" 2>&1 &
  broker_pid=$!; PIDS+=("$broker_pid")
  wait_port "$broker_port"
  sleep 3  # registered with the name server
  for encoding in json rocketmq; do
    "${client[@]}" "$BENCH" produce -n "127.0.0.1:$NS_PORT" --broker-pid "$broker_pid" \
      --label "ferrocket-$n" --topic "Scaling$n" --header-encoding "$encoding" "${common[@]}" \
      --out "$OUT/produce-$encoding-$n" > /dev/null
  done
  "${client[@]}" "$BENCH" e2e -n "127.0.0.1:$NS_PORT" --broker-pid "$broker_pid" \
    --label "ferrocket-$n" --topic "ScalingE2e$n" --rate "${E2E_RATE:-20000}" \
    --header-encoding rocketmq --duration "$SECS" --with-ceiling --ceiling-threads "$n" \
    --quiet --out "$OUT/e2e-$n" > /dev/null
  kill "$broker_pid"; wait "$broker_pid" 2>/dev/null || true
  rm -rf "$W/store-$n"
  echo "== $n shards: done"
done

python3 - "$OUT" <<'EOF' | tee "$OUT/summary.md"
import json, os, sys
out = sys.argv[1]
def load(name, index=0):
    path = os.path.join(out, name, "report.json")
    return json.load(open(path))["targets"][index] if os.path.exists(path) else None
def cell(t, e2e=False):
    if t is None:
        return "-"
    lat = t["e2e_latency"] if e2e else t["request_latency"]
    cpu = (t.get("broker_cpu") or {}).get("cpu_us_per_msg", float("nan"))
    return f'{t["msgs_per_s"]:,.0f} msg/s, {cpu:.2f} CPU-µs, p99 {lat["p99_us"] / 1000:.2f} ms'
counts = sorted({int(d.rsplit("-", 1)[1]) for d in os.listdir(out) if d.startswith("produce-")})
print("| shards | JSON produce | JSON ceiling | share | binary produce | binary ceiling | share | e2e | e2e ceiling |")
print("|---|---|---|---|---|---|---|---|---|")
for n in counts:
    row = [str(n)]
    for enc in ("json", "rocketmq"):
        p, c = load(f"produce-{enc}-{n}"), load(f"ceiling-{enc}-{n}")
        share = f'{100 * p["msgs_per_s"] / c["msgs_per_s"]:.0f}%' if p and c else "-"
        row += [cell(p), cell(c), share]
    row.append(cell(load(f"e2e-{n}"), e2e=True))
    row.append(cell(load(f"e2e-{n}", -1), e2e=True))
    print("| " + " | ".join(row) + " |")
EOF
echo "reports: $OUT"
