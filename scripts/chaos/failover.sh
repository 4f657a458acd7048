#!/usr/bin/env bash
# Failover campaign: three controllers, a name server and three brokers of
# one set in controller mode on 127.0.0.1 (tests/controller_failover.rs).
# The controller leader is killed once, then the master is killed with
# SIGKILL CYCLES times under a steady load of sends that wait for every
# in-sync replica; after each kill the old master is started again and
# rejoins. Prints each failover time (kill -9 to the first acknowledged
# send on the new master), their median and max, and the acknowledged and
# lost counts. CI runs 2 cycles.
#
#   scripts/chaos/failover.sh [CYCLES]     default 10
#
# The brokers check their role and in-sync set at Java's default periods
# (5 s; FAILOVER_PERIOD_MS overrides): a failover itself is driven by the
# closed connection and the controller's notification, not by them.
#
# Every process is stopped by pid and every store deleted by the test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
cycles="${1:-10}"
case "$cycles" in ''|*[!0-9]*) echo "usage: $0 [cycles]" >&2; exit 2 ;; esac
FAILOVER_PERIOD_MS="${FAILOVER_PERIOD_MS:-5000}" FAILOVER_CYCLES="$cycles" cargo test --test controller_failover \
    repeated_master_kills_under_load -- --nocapture 2>&1 \
    | grep -E '^failover|^test |panicked|test result'
