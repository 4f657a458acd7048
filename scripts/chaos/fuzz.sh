#!/usr/bin/env bash
# Fuzz campaign: N random and mutated frames thrown at a live broker by
# three connections while a normal client keeps sending and pulling
# (tests/live_fuzz.rs), then the codec and body fuzz targets with
# PROPTEST_CASES cases each. CI runs 20,000 frames and 20,000 cases.
#
#   scripts/chaos/fuzz.sh [FRAMES] [CASES]     defaults 10000000 and 1000000
#
# The broker binds 127.0.0.1 on a free port; the test stops it and deletes
# its store. Exits non-zero when the broker fails or the client sees an error.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
frames="${1:-10000000}"
cases="${2:-1000000}"
for n in "$frames" "$cases"; do
    case "$n" in ''|*[!0-9]*) echo "usage: $0 [frames] [cases]" >&2; exit 2 ;; esac
done
FUZZ_FRAMES="$frames" cargo test --release --test live_fuzz -- --nocapture 2>&1 \
    | grep -E '^live fuzz|^test |panicked|test result'
PROPTEST_CASES="$cases" cargo test --release -p ferrocket-protocol --test fuzz --test fuzz_bodies 2>&1 \
    | grep -E '^test |panicked|test result'
PROPTEST_CASES="$cases" cargo test --release -p ferrocket-broker --test fuzz_sql92 2>&1 \
    | grep -E '^test |panicked|test result'
