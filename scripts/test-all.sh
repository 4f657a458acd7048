#!/usr/bin/env bash
# The project's test command (README: ./scripts/test-all.sh).
#
#  1. builds every crate and test target,
#  2. runs the Rust tests (unit, integration: real `ferrocket` processes),
#  3. creates or reuses a Python venv in target/interop-venv with the pinned
#     Apache RocketMQ C++ client (PyPI rocketmq==0.4.4) and runs the interop
#     suite in tests/interop against target/debug/ferrocket,
#  4. runs tests/interop-rust (transactions and pop consumption through
#     rocketmq-client-rust).
#
# Any failure fails the whole command. Environment:
#   PYTHON           interpreter for the venv (default: python3.11, else python3)
#   SKIP_INTEROP=1   stop after the Rust tests
#   PYTEST_ARGS      extra pytest arguments, e.g. "-k send_sync -x"
#   SKIP_INTEROP_RUST=1  skip step 4
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac

step() { printf '\n==> %s\n' "$*"; }

step "cargo build --workspace --all-targets"
cargo build --workspace --all-targets

step "cargo test --workspace"
cargo test --workspace

if [[ "${SKIP_INTEROP:-0}" == "1" ]]; then
    step "SKIP_INTEROP=1: interop suite skipped"
    exit 0
fi

FERROCKET_BIN="$TARGET_DIR/debug/ferrocket"
if [[ ! -x "$FERROCKET_BIN" ]]; then
    echo "error: $FERROCKET_BIN was not built" >&2
    exit 1
fi

VENV="$TARGET_DIR/interop-venv"
REQUIREMENTS="$ROOT/tests/interop/requirements.txt"
STAMP="$VENV/.requirements.sha256"

pick_python() {
    if [[ -n "${PYTHON:-}" ]]; then
        echo "$PYTHON"
    elif command -v python3.11 >/dev/null 2>&1; then
        echo python3.11
    else
        echo python3
    fi
}

want_hash="$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)"
if [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1 \
    && [[ -f "$STAMP" ]] && [[ "$(cat "$STAMP")" == "$want_hash" ]]; then
    step "reusing the interop venv at $VENV"
else
    PY="$(pick_python)"
    step "creating the interop venv at $VENV with $PY ($("$PY" --version 2>&1))"
    rm -rf "$VENV"
    if "$PY" -m venv "$VENV"; then
        "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet -r "$REQUIREMENTS"
    else
        # Some distributions ship Python without ensurepip: make the venv
        # without pip and install into it with the interpreter's own pip.
        echo "python -m venv failed; retrying without pip in the venv" >&2
        rm -rf "$VENV"
        "$PY" -m venv --without-pip "$VENV"
        "$PY" -m pip --python "$VENV/bin/python" install --disable-pip-version-check --quiet \
            -r "$REQUIREMENTS"
    fi
    echo "$want_hash" >"$STAMP"
fi
# The wheel bundles librocketmq.so; fail here, clearly, if it cannot load.
"$VENV/bin/python" -c 'import rocketmq.client' || {
    echo "error: the rocketmq client library does not load in $VENV (see above)" >&2
    exit 1
}

# The C++ client writes its logs (and snapshots) under $HOME; point it into
# target/ instead of the user's home. Cleared each run.
INTEROP_HOME="$TARGET_DIR/interop-home"
rm -rf "$INTEROP_HOME"
mkdir -p "$INTEROP_HOME"

step "pytest tests/interop (C++ client logs and server logs under $INTEROP_HOME)"
# shellcheck disable=SC2086 # PYTEST_ARGS is split on purpose.
env FERROCKET_BIN="$FERROCKET_BIN" FERROCKET_INTEROP_HOME="$INTEROP_HOME" \
    "$VENV/bin/python" -m pytest "$ROOT/tests/interop" ${PYTEST_ARGS:-}

if [[ "${SKIP_INTEROP_RUST:-0}" == "1" ]]; then
    step "SKIP_INTEROP_RUST=1: rocketmq-client-rust suite skipped"
    exit 0
fi
# Transactions and pop consumption through rocketmq-client-rust: a
# standalone crate (large dependency tree, its own target dir; a cold
# build takes minutes).
step "cargo test tests/interop-rust (rocketmq-client-rust, target dir $TARGET_DIR/interop-rust)"
FERROCKET_BIN="$FERROCKET_BIN" cargo test --locked --tests \
    --manifest-path "$ROOT/tests/interop-rust/Cargo.toml" --target-dir "$TARGET_DIR/interop-rust"
