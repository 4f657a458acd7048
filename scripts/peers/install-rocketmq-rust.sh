#!/usr/bin/env bash
# Installs the rocketmq-rust peer (crates.io `rocketmq-namesrv` and
# `rocketmq-broker`, version 1.0.0 by default) into a local directory, so
# `ferrocket-bench compare` can measure Ferrocket against it side by side.
#
#   scripts/peers/install-rocketmq-rust.sh [DEST]        (default: target/peers)
#
# Binaries land in DEST/bin: rocketmq-namesrv-rust and rocketmq-broker-rust.
# Both crates need Rust >= 1.95 and take a while to compile (hundreds of
# dependencies); they share one build directory (DEST/build) so the second
# reuses the first's dependencies. Environment:
#   ROCKETMQ_RUST_VERSION   crate version (default 1.0.0)
#   CARGO_BUILD_JOBS        parallel compile jobs (default: all cores)
#   PEERS_UNLOCKED=1        resolve dependencies afresh instead of using the
#                           crates' own Cargo.lock (--locked)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VERSION="${ROCKETMQ_RUST_VERSION:-1.0.0}"
DEST="${1:-target/peers}"
mkdir -p "$DEST"
DEST="$(cd "$DEST" && pwd)"

LOCKED=(--locked)
if [[ "${PEERS_UNLOCKED:-0}" == "1" ]]; then
    LOCKED=()
fi

install_one() {
    local crate="$1" bin="$2"
    if [[ -x "$DEST/bin/$bin" ]] && "$DEST/bin/$bin" --version 2>/dev/null | grep -q "version=$VERSION"; then
        echo "==> $crate $VERSION already installed: $DEST/bin/$bin" >&2
        return
    fi
    echo "==> cargo install $crate@$VERSION into $DEST" >&2
    cargo install "${LOCKED[@]}" --root "$DEST" --target-dir "$DEST/build" \
        --version "$VERSION" --bin "$bin" "$crate"
}

install_one rocketmq-namesrv rocketmq-namesrv-rust
install_one rocketmq-broker rocketmq-broker-rust

echo "==> installed:" >&2
ls -l "$DEST/bin/rocketmq-namesrv-rust" "$DEST/bin/rocketmq-broker-rust" >&2
echo "start them with: scripts/peers/run-rocketmq-rust.sh --bin $DEST/bin" >&2
