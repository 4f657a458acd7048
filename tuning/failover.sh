#!/usr/bin/env bash
# Outage per client after kill -9 of the master, in controller mode (issue 37
# item 6): Ferrocket, then Apache RocketMQ 5.5.0, each as one controller, a
# name server and three brokers of one set (allAckInSyncStateSet=true, every
# other setting at its default, as the README sets it up) plus a gRPC proxy,
# on 127.0.0.1 ports chosen here, data under a temporary directory deleted at
# the end. Clients, one producer each, all sending at once (one sync send
# every PERIOD_MS, default 10, every setting at the client's default):
#   cpp            Apache C++ client, PyPI rocketmq==0.4.4 (tests/interop's venv)
#   java-remoting  org.apache.rocketmq:rocketmq-client 5.5.0
#   v5-inbroker    rocketmq-client-java 5.2.0 on the brokers' own ports (Ferrocket only)
#   v5-proxy       rocketmq-client-java 5.2.0 through `ferrocket proxy` / Apache's rocketmq-proxy
#   java-remoting-pollNms  with JAVA_POLL_MS=N: the Java client with setPollNameServerInterval(N)
# Each kill: wait for three in sync and every producer acking, kill -9 the
# master the controller names, time the controller's election (polled every
# 20 ms) and each producer's first acknowledged send after the kill, restart
# the killed broker and wait for it to rejoin the in-sync set.
#
#   tuning/failover.sh [KILLS] [ferrocket] [apache]     (default: 10, both)
#
# Needs: target/debug/ferrocket (or FERROCKET_BIN), Java 17 + Maven (the
# clients come from the Maven registry into target/m2), the tests/interop
# venv (target/interop-venv, scripts/test-all.sh makes it) and Apache
# RocketMQ 5.5.0 (scripts/peers/install-apache-rocketmq.sh). One JSON line per
# kill is kept in target/failover/results-<time>.jsonl; KEEP_WORK=1 keeps
# the temporary directory (every server's log, each producer's output).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
export TARGET_DIR="${TARGET_DIR:-$ROOT/target}"
KILLS="${1:-10}"
shift || true
mkdir -p "$TARGET_DIR/failover"
for profile in remoting grpc; do
    [[ -s "$TARGET_DIR/failover/$profile.cp" ]] && continue
    mvn -B -q -f tuning/failover/pom.xml -Dmaven.repo.local="$TARGET_DIR/m2" -P "$profile" \
        org.apache.maven.plugins:maven-dependency-plugin:3.6.1:build-classpath \
        -Dmdep.outputFile="$TARGET_DIR/failover/$profile.cp"
done
[[ -x "$TARGET_DIR/interop-venv/bin/python" ]] || {
    echo "no $TARGET_DIR/interop-venv: python3 -m venv it and pip install rocketmq==0.4.4" >&2; exit 1; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/ferrocket-failover.XXXXXX")"
if [[ "${KEEP_WORK:-0}" == 1 ]]; then
    echo "KEEP_WORK=1: logs and stores stay in $WORK"
else
    trap 'rm -rf "$WORK"' EXIT
fi
RESULTS="$TARGET_DIR/failover/results-$(date -u +%Y%m%dT%H%M%S).jsonl"
echo "results: $RESULTS; ferrocket: ${FERROCKET_BIN:-$TARGET_DIR/debug/ferrocket}; $(nproc) cores; $(uptime)"
python3 tuning/failover/campaign.py "$WORK" "$RESULTS" "$KILLS" "$@"
