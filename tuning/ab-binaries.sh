#!/usr/bin/env bash
# Interleaved compare of two ferrocket builds on one host: the same broker
# settings, two name servers (each with its own KV config file: one name
# server per file), one `ferrocket-bench compare` run, then every
# process this script started is stopped by pid.
#
#   tuning/ab-binaries.sh BIN_A BIN_B [bench args...]
#   BROKER_ARGS="--shards 1" tuning/ab-binaries.sh /tmp/ferrocket-old target/release/ferrocket --inflight 128
#
# Environment: BROKER_ARGS (extra broker flags; BROKER_ARGS_A/_B per side), LABEL_A/LABEL_B, ROUNDS
# (default 3), ROUND_SECS (default 5), OUT (report directory, default
# target/bench/ab-TIME), KEEP=1 (keep the stores and logs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
A=${1:?first ferrocket binary}
B=${2:?second ferrocket binary}
shift 2
BENCH=${BENCH:-target/release/ferrocket-bench}
WORK=$(mktemp -d /tmp/ferrocket-ab.XXXXXX)
PIDS=()
# Stores preallocate 1 GiB CommitLog segments: remove them on exit (the
# report is written to OUT, outside WORK). KEEP=1 keeps WORK for a look.
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -z "${KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
NS_A=$(port); NS_B=$(port); BR_A=$(port); BR_B=$(port); HA_A=$(port); HA_B=$(port)
"$A" namesrv --listen-addr 127.0.0.1 --listen-port "$NS_A" --set "kvConfigPath=$WORK/ns-a/kvConfig.json" > "$WORK/ns-a.log" 2>&1 & PIDS+=($!)
"$B" namesrv --listen-addr 127.0.0.1 --listen-port "$NS_B" --set "kvConfigPath=$WORK/ns-b/kvConfig.json" > "$WORK/ns-b.log" 2>&1 & PIDS+=($!)
sleep 1
# shellcheck disable=SC2086
"$A" broker --listen-addr 127.0.0.1 --listen-port "$BR_A" -n "127.0.0.1:$NS_A" --store-path-root-dir "$WORK/a" --set "haListenPort=$HA_A" ${BROKER_ARGS_A:-${BROKER_ARGS:-}} > "$WORK/a.log" 2>&1 & PA=$!; PIDS+=($PA)
# shellcheck disable=SC2086
"$B" broker --listen-addr 127.0.0.1 --listen-port "$BR_B" -n "127.0.0.1:$NS_B" --store-path-root-dir "$WORK/b" --set "haListenPort=$HA_B" ${BROKER_ARGS_B:-${BROKER_ARGS:-}} > "$WORK/b.log" 2>&1 & PB=$!; PIDS+=($PB)
sleep 4
uptime
"$BENCH" compare --namesrv-a "127.0.0.1:$NS_A" --label-a "${LABEL_A:-a}" --namesrv-b "127.0.0.1:$NS_B" --label-b "${LABEL_B:-b}" \
  --broker-pid-a "$PA" --broker-pid-b "$PB" --rounds "${ROUNDS:-3}" --round-secs "${ROUND_SECS:-5}" \
  --out "${OUT:-target/bench/ab-$(date +%s)}" --quiet "$@" 2>&1 | tail -30
