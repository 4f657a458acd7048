#!/usr/bin/env bash
# Crash campaign: N cycles of "SYNC_FLUSH broker under 4 producers, kill -9
# at a random moment, restart, check every acknowledged message is where it
# was acknowledged and every queue is dense" (tests/kill9.rs). CI runs 3.
#
#   scripts/chaos/kill9.sh [N]      default N=100
#
# Servers bind 127.0.0.1 on free ports; the test stops what it starts and
# deletes its store. Prints one line per cycle; exits non-zero on any loss.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
cycles="${1:-100}"
case "$cycles" in ''|*[!0-9]*) echo "usage: $0 [cycles]" >&2; exit 2 ;; esac
KILL9_CYCLES="$cycles" cargo test --test kill9 -- --nocapture 2>&1 \
    | grep -E '^kill9 cycle|^test |panicked|test result'
