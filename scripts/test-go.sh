#!/usr/bin/env bash
# The Go client interop suite (tests/interop-go): Apache RocketMQ's Go
# client, github.com/apache/rocketmq-client-go/v2 (the version pinned in
# tests/interop-go/go.mod), against a real `ferrocket start` per test; and
# TestGrafanaDashboard, which loads monitoring/grafana-dashboard.json with
# the Grafana Foundation SDK for Go (pinned there too) and needs no server.
#
# Needs Go 1.21+ (nothing else: `go test` fetches the client, the SDK and
# their dependencies from the Go module proxy, checked against go.sum, into a
# module cache under the target dir). Environment:
#   FERROCKET_BIN   the binary under test (default $TARGET_DIR/debug/ferrocket)
#   TARGET_DIR      where the Go module and build caches ($TARGET_DIR/go)
#                   and the server and client logs ($TARGET_DIR/interop-go/home)
#                   go (default: CARGO_TARGET_DIR, else ./target)
#   GO_TEST_ARGS    extra `go test` arguments, e.g. "-run TestOrderly -v"
#   FERROCKET_GO_LOG_LEVEL  the client's log level (default warn; its log is
#                   $TARGET_DIR/interop-go/home/rocketmq-client-go.log)
# Exits non-zero when a test fails or Go is missing.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
TARGET_DIR="${TARGET_DIR:-${CARGO_TARGET_DIR:-$ROOT/target}}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
FERROCKET_BIN="${FERROCKET_BIN:-$TARGET_DIR/debug/ferrocket}"
case "$FERROCKET_BIN" in /*) ;; *) FERROCKET_BIN="$ROOT/$FERROCKET_BIN" ;; esac

if ! command -v go >/dev/null 2>&1; then
    echo "error: 'go' not found: the Go interop suite needs Go 1.21+" >&2
    exit 1
fi
if [[ ! -x "$FERROCKET_BIN" ]]; then
    echo "error: $FERROCKET_BIN is not an executable; build it (cargo build --bin ferrocket) or set FERROCKET_BIN" >&2
    exit 1
fi

# Everything Go downloads or builds stays under the target dir. The user's
# go env file (GOPROXY and the like) still applies although HOME moves.
GOENV="$(go env GOENV)"
export GOENV
export GOMODCACHE="$TARGET_DIR/go/mod"
export GOCACHE="$TARGET_DIR/go/cache"
export GOPATH="$TARGET_DIR/go/path"
# go.mod says which Go it needs; never download another toolchain.
export GOTOOLCHAIN=local
# go.sum is committed: a changed or missing checksum fails, it is not added.
# -modcacherw: Go makes its module cache read-only, which `cargo clean` and
# `rm -rf target` could not delete.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly -modcacherw"

home="$TARGET_DIR/interop-go/home"
rm -rf "$home"
mkdir -p "$home"
printf '\n==> Go interop suite, %s (server and client logs under %s)\n' \
    "$(grep -m1 'github.com/apache/rocketmq-client-go/v2 ' "$ROOT/tests/interop-go/go.mod" | xargs)" "$home"
started=$SECONDS
# The client keeps broadcasting offsets under $HOME/.rocketmq_client_go:
# HOME points into the target dir for the tests.
# shellcheck disable=SC2086 # GO_TEST_ARGS is split on purpose.
if (cd "$ROOT/tests/interop-go" &&
    HOME="$home" FERROCKET_BIN="$FERROCKET_BIN" FERROCKET_INTEROP_HOME="$home" \
        go test -count=1 -timeout 10m ${GO_TEST_ARGS:-} ./...); then
    echo "Go interop suite passed ($((SECONDS - started)) s)"
else
    echo "Go interop suite FAILED ($((SECONDS - started)) s); logs under $home" >&2
    exit 1
fi
