#!/usr/bin/env bash
# Nemesis campaign (tests/nemesis.rs): SCHEDULES randomized fault schedules
# against a controller-mode cluster of real processes on test hosts in
# network namespaces (root and iproute2 needed): partitions of the master
# from the controller or a replica (both ways or one way), kill -9 of the
# master, SIGSTOP/SIGCONT of the master, restarts of a replica, heals; a
# producer records every acknowledged send (WAIT=true,
# allAckInSyncStateSet=true) and the checker finds each on the final master
# once, in order. Prints each schedule's faults and counts, and the result.
# CI runs 2 schedules (and the divergent-slave schedule).
#
#   scripts/chaos/nemesis.sh [SCHEDULES [FIRST_SEED]]   default 100, time-based
#
# A failing schedule prints its seed: NEMESIS_SEED=S NEMESIS_SCHEDULES=1
# repeats it. Every process is stopped by pid, every store and namespace
# deleted by the test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
schedules="${1:-100}"
seed="${2:-$(date +%s)}"
case "$schedules$seed" in *[!0-9]*) echo "usage: $0 [schedules [first-seed]]" >&2; exit 2 ;; esac
NEMESIS_SCHEDULES="$schedules" NEMESIS_SEED="$seed" FERROCKET_TEST_TIMEOUT_S=100000 \
    cargo test --test nemesis random_schedules -- --nocapture 2>&1 \
    | grep --line-buffered -E '^nemesis|^test |panicked|lost|test result'
