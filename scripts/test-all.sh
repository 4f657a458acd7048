#!/usr/bin/env bash
# The project's test command (README: ./scripts/test-all.sh).
#
#  1. builds every crate and test target,
#  2. runs the Rust tests (unit, integration: real `ferrocket` processes;
#     tests/tiered.rs also runs s3s-fs, an S3-compatible server installed
#     from crates.io into target/s3s),
#  3. creates or reuses a Python venv in target/interop-venv with the pinned
#     Apache RocketMQ C++ client (PyPI rocketmq==0.4.4) and runs the interop
#     suite in tests/interop against target/debug/ferrocket,
#  4. creates or reuses a second venv (target/interop-v5-venv) with the
#     official RocketMQ 5 Python client (PyPI rocketmq-python-client==5.1.2)
#     and runs tests/interop-v5 against `ferrocket proxy`,
#  5. runs tests/interop-java (scripts/test-java.sh): Apache RocketMQ's own
#     Java clients, rocketmq-client 4.9.8 and 5.5.0 and the gRPC
#     rocketmq-client-java 5.2.0 (v5 API), through Maven (needs
#     Java 17+ and Maven 3.8+),
#  6. runs tests/interop-go (scripts/test-go.sh): Apache RocketMQ's Go
#     client, rocketmq-client-go/v2 as pinned in tests/interop-go/go.mod,
#     through `go test` (needs Go 1.21+),
#  7. runs tests/interop-rust (transactions and pop consumption through
#     rocketmq-client-rust, and the RocketMQ 5 Rust client, the crate
#     `rocketmq` 5.0.0, through the broker's gRPC port).
#
# Any failure fails the whole command. Environment:
#   PYTHON           interpreter for the venv (default: python3.11, else python3)
#   SKIP_INTEROP=1   stop after the Rust tests
#   PYTEST_ARGS      extra pytest arguments, e.g. "-k send_sync -x"
#   SKIP_INTEROP_JAVA=1  skip step 5
#   SKIP_INTEROP_GO=1    skip step 6
#   SKIP_INTEROP_RUST=1  skip step 7
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac

step() { printf '\n==> %s\n' "$*"; }

# The interop suites' downloads (Maven, Go modules) wait on the network:
# fetch them in the background while the Rust builds and suites use the
# CPUs; the Java step waits for it.
PREFETCH_LOG="$TARGET_DIR/prefetch-deps.log"
mkdir -p "$TARGET_DIR"
TARGET_DIR="$TARGET_DIR" setsid "$ROOT/scripts/prefetch-deps.sh" >"$PREFETCH_LOG" 2>&1 &
PREFETCH_PID=$!
# Its own process group: whatever it still runs when this script ends goes.
trap 'kill -- -"$PREFETCH_PID" 2>/dev/null || true' EXIT
step "fetching the Java and Go clients in the background (pid $PREFETCH_PID, log $PREFETCH_LOG)"

# tests/tiered.rs, tiered_retention.rs, tiered_readers.rs, tiered_restore.rs,
# tiered_fence.rs and ferrocket-tier's unit tests run a real S3-compatible
# server as its own process: the crate s3s-fs (pinned), installed once into
# target/s3s while the workspace builds (cargo install skips it when that
# version is there).
S3S_FS_VERSION=0.14.1
S3S_LOG="$TARGET_DIR/s3s-install.log"
mkdir -p "$TARGET_DIR/s3s"
cargo install s3s-fs --version "$S3S_FS_VERSION" --features binary --locked \
    --root "$TARGET_DIR/s3s" --target-dir "$TARGET_DIR/s3s/build" >"$S3S_LOG" 2>&1 &
S3S_PID=$!
trap 'kill -- -"$PREFETCH_PID" 2>/dev/null || true; kill "$S3S_PID" 2>/dev/null || true' EXIT
step "installing s3s-fs $S3S_FS_VERSION in the background (pid $S3S_PID, log $S3S_LOG)"

step "cargo build --workspace --all-targets"
cargo build --workspace --all-targets

step "waiting for s3s-fs (tests/tiered.rs)"
if ! wait "$S3S_PID"; then
    cat "$S3S_LOG" >&2
    echo "error: installing s3s-fs failed (see above)" >&2
    exit 1
fi
rm -rf "$TARGET_DIR/s3s/build"
export FERROCKET_S3S_FS="$TARGET_DIR/s3s/bin/s3s-fs" FERROCKET_TEST_ALL=1

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

pick_python() {
    if [[ -n "${PYTHON:-}" ]]; then
        echo "$PYTHON"
    elif command -v python3.11 >/dev/null 2>&1; then
        echo python3.11
    else
        echo python3
    fi
}

# make_venv DIR REQUIREMENTS: creates (or reuses, while REQUIREMENTS is
# unchanged) a venv with those pinned packages.
make_venv() {
    local venv="$1" requirements="$2"
    local stamp="$venv/.requirements.sha256"
    local want_hash
    want_hash="$(sha256sum "$requirements" | cut -d' ' -f1)"
    if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c 'import sys' >/dev/null 2>&1 \
        && [[ -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$want_hash" ]]; then
        step "reusing the venv at $venv"
        return
    fi
    local py
    py="$(pick_python)"
    step "creating the venv at $venv with $py ($("$py" --version 2>&1))"
    rm -rf "$venv"
    if "$py" -m venv "$venv"; then
        "$venv/bin/python" -m pip install --disable-pip-version-check --quiet -r "$requirements"
    else
        # Some distributions ship Python without ensurepip: make the venv
        # without pip and install into it with the interpreter's own pip.
        echo "python -m venv failed; retrying without pip in the venv" >&2
        rm -rf "$venv"
        "$py" -m venv --without-pip "$venv"
        "$py" -m pip --python "$venv/bin/python" install --disable-pip-version-check --quiet \
            -r "$requirements"
    fi
    echo "$want_hash" >"$stamp"
}

VENV="$TARGET_DIR/interop-venv"
make_venv "$VENV" "$ROOT/tests/interop/requirements.txt"
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

# The RocketMQ 5 clients (gRPC) through `ferrocket proxy`: the official
# Python v5 client, which also imports as `rocketmq`, in its own venv; the
# cross-protocol tests run the C++ client from the first venv.
V5_VENV="$TARGET_DIR/interop-v5-venv"
make_venv "$V5_VENV" "$ROOT/tests/interop-v5/requirements.txt"
V5_HOME="$TARGET_DIR/interop-v5-home"
rm -rf "$V5_HOME"
mkdir -p "$V5_HOME"
# The Node.js v5 client (npm rocketmq-client-nodejs, pinned in
# tests/interop-v5/node/package.json), installed under target/.
NODE_DIR="$TARGET_DIR/interop-v5-node"
if command -v npm >/dev/null 2>&1; then
    step "npm install tests/interop-v5/node into $NODE_DIR"
    mkdir -p "$NODE_DIR"
    cp "$ROOT/tests/interop-v5/node/package.json" "$NODE_DIR/package.json"
    (cd "$NODE_DIR" && npm install --no-audit --no-fund --loglevel=error)
else
    echo "npm not found: the Node.js v5 client test will be skipped" >&2
fi
step "pytest tests/interop-v5 (Python v5 client; its logs under $V5_HOME)"
# shellcheck disable=SC2086 # PYTEST_ARGS is split on purpose.
env HOME="$V5_HOME" FERROCKET_BIN="$FERROCKET_BIN" FERROCKET_INTEROP_HOME="$V5_HOME" \
    FERROCKET_CPP_PYTHON="$VENV/bin/python" FERROCKET_NODE_DIR="$NODE_DIR" \
    "$V5_VENV/bin/python" -m pytest "$ROOT/tests/interop-v5" ${PYTEST_ARGS:-}

# Apache RocketMQ's own Java client (rocketmq-client 4.9.8 and 5.5.0, JUnit
# 5 through Maven; the Maven local repository and build output under
# $TARGET_DIR). Java 17+ and Maven 3.8+ are required: without them this
# fails, it does not skip.
if [[ "${SKIP_INTEROP_JAVA:-0}" == "1" ]]; then
    step "SKIP_INTEROP_JAVA=1: Java client suite skipped"
else
    for tool in java mvn; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "error: '$tool' not found: tests/interop-java needs Java 17+ and Maven 3.8+" \
                "(or set SKIP_INTEROP_JAVA=1 to leave it out)" >&2
            exit 1
        fi
    done
    if ! wait "$PREFETCH_PID"; then
        echo "note: the background fetch reported a failure (see $PREFETCH_LOG); the suites fetch what is missing" >&2
    fi
    step "scripts/test-java.sh (Java clients 4.9.8, 5.5.0 and gRPC 5.2.0; logs under $TARGET_DIR/interop-java)"
    FERROCKET_BIN="$FERROCKET_BIN" TARGET_DIR="$TARGET_DIR" "$ROOT/scripts/test-java.sh"
fi

# Apache RocketMQ's Go client (rocketmq-client-go/v2, pinned by
# tests/interop-go/go.mod and go.sum; the module and build caches under
# $TARGET_DIR/go). Go 1.21+ is required: without it this fails, it does not
# skip.
if [[ "${SKIP_INTEROP_GO:-0}" == "1" ]]; then
    step "SKIP_INTEROP_GO=1: Go client suite skipped"
else
    if ! command -v go >/dev/null 2>&1; then
        echo "error: 'go' not found: tests/interop-go needs Go 1.21+" \
            "(or set SKIP_INTEROP_GO=1 to leave it out)" >&2
        exit 1
    fi
    step "scripts/test-go.sh (Go client; logs under $TARGET_DIR/interop-go/home)"
    FERROCKET_BIN="$FERROCKET_BIN" TARGET_DIR="$TARGET_DIR" "$ROOT/scripts/test-go.sh"
fi

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
