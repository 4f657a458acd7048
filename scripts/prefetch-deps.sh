#!/usr/bin/env bash
# Fetches what the interop suites download (the Java clients and their
# plugins from the Maven registry; Go modules once tests/interop-go has a
# go.mod) into the target dir, so that scripts/test-all.sh can do it in the
# background while Rust builds and the Python suites run: the downloads
# wait on the network, the builds on the CPUs. Failures here are only
# reported: the suites themselves fetch what is still missing, and fail
# loudly if they cannot.
#
#   TARGET_DIR   where the caches go (default: CARGO_TARGET_DIR, else ./target)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
TARGET_DIR="${TARGET_DIR:-${CARGO_TARGET_DIR:-$ROOT/target}}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
status=0
if command -v mvn >/dev/null 2>&1 && [[ -f "$ROOT/tests/interop-java/pom.xml" ]]; then
    for profile in $(grep -o '<id>\(rocketmq\|grpc\)[0-9]*</id>' "$ROOT/tests/interop-java/pom.xml" | sed 's/<[^>]*>//g'); do
        # The test phase with a filter that matches no test: every plugin and
        # provider is resolved, and nothing runs.
        mvn -B -q -Dstyle.color=never -f "$ROOT/tests/interop-java/pom.xml" -P "$profile" \
            -Dmaven.repo.local="$TARGET_DIR/m2" -Dinterop.build.dir="$TARGET_DIR/prefetch-java/$profile" \
            -Dtest=PrefetchOnlyNoSuchTest -Dsurefire.failIfNoSpecifiedTests=false test \
            || { echo "prefetch: Maven profile $profile failed" >&2; status=1; }
    done
    # Surefire resolves its JUnit provider and launcher only when a test
    # runs: fetch them too (versions from the pom).
    pom="$ROOT/tests/interop-java/pom.xml"
    surefire="$(grep -A1 '<artifactId>maven-surefire-plugin</artifactId>' "$pom" | grep -o '[0-9][0-9.]*' | head -1)"
    junit="$(grep -o '<junit.version>[^<]*' "$pom" | sed 's/.*>//')"
    platform="1${junit#5}"
    for artifact in "org.apache.maven.surefire:surefire-junit-platform:$surefire" \
        "org.junit.platform:junit-platform-launcher:$platform"; do
        mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$TARGET_DIR/m2" \
            dependency:get -Dartifact="$artifact" \
            || { echo "prefetch: $artifact failed" >&2; status=1; }
    done
    # Apache RocketMQ's own servers, for the mixed-cluster tests.
    if [[ -x "$ROOT/scripts/peers/install-apache-rocketmq.sh" && "${SKIP_APACHE_ROCKETMQ:-0}" != "1" ]]; then
        TARGET_DIR="$TARGET_DIR" "$ROOT/scripts/peers/install-apache-rocketmq.sh" >/dev/null \
            || { echo "prefetch: installing Apache RocketMQ failed" >&2; status=1; }
    fi
fi
if command -v go >/dev/null 2>&1 && [[ -f "$ROOT/tests/interop-go/go.mod" ]]; then
    # The same caches and flags as scripts/test-go.sh.
    (cd "$ROOT/tests/interop-go" && GOENV="$(go env GOENV)" GOMODCACHE="$TARGET_DIR/go/mod" \
        GOPATH="$TARGET_DIR/go/path" GOCACHE="$TARGET_DIR/go/cache" GOTOOLCHAIN=local \
        GOFLAGS="-mod=readonly -modcacherw" go mod download) \
        || { echo "prefetch: go mod download failed" >&2; status=1; }
fi
exit "$status"
