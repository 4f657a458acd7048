#!/usr/bin/env bash
# The Java client interop suite (tests/interop-java): Apache RocketMQ's own
# Java Remoting client, org.apache.rocketmq:rocketmq-client, at 4.9.8 and at
# 5.5.0, against a real `ferrocket start` per test class; with 5.5.0 also
# mqadmin (rocketmq-tools, tests v5.mqadmin) against every server; and
# ("grpc5") the gRPC client of the v5 API, rocketmq-client-java 5.2.0,
# against the broker's gRPC endpoint and a `ferrocket proxy` (tests grpc).
#
# Needs Java 17+ and Maven 3.8+ (nothing else: Maven fetches the client,
# JUnit and its plugins from the Maven registry into a local repository
# under the target dir). Environment:
#   FERROCKET_BIN   the binary under test (default $TARGET_DIR/debug/ferrocket)
#   TARGET_DIR      where the local Maven repository ($TARGET_DIR/m2), the
#                   build output and the server and client logs
#                   ($TARGET_DIR/interop-java/<version>/home) go
#                   (default: CARGO_TARGET_DIR, else ./target)
#   JAVA_CLIENT_VERSIONS  which suites to run (default "4 5 grpc5": profiles
#                   rocketmq4, rocketmq5 and grpc5)
#   MVN_ARGS        extra Maven arguments, e.g. "-Dtest=SendTest"
#   SKIP_APACHE_ROCKETMQ=1  do not install Apache RocketMQ's servers: the
#                   5.x suite's mixed-cluster tests (package mixed) skip
#   APACHE_ROCKETMQ_VERSION  which Apache RocketMQ the mixed-cluster tests
#                   run beside (default: the install script's)
# Exits non-zero when a suite fails or Java or Maven is missing.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
TARGET_DIR="${TARGET_DIR:-${CARGO_TARGET_DIR:-$ROOT/target}}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
FERROCKET_BIN="${FERROCKET_BIN:-$TARGET_DIR/debug/ferrocket}"
case "$FERROCKET_BIN" in /*) ;; *) FERROCKET_BIN="$ROOT/$FERROCKET_BIN" ;; esac

for tool in java mvn; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "error: '$tool' not found: the Java interop suite needs Java 17+ and Maven 3.8+" >&2
        exit 1
    fi
done
if [[ ! -x "$FERROCKET_BIN" ]]; then
    echo "error: $FERROCKET_BIN is not an executable; build it (cargo build --bin ferrocket) or set FERROCKET_BIN" >&2
    exit 1
fi

# Prints Surefire's totals for one suite from its XML reports (with -q
# Maven itself prints nothing for a passing run).
summarize() {
    local reports="$1" tests=0 failures=0 errors=0 skipped=0 file head
    attr() { grep -o " $1=\"[0-9]*\"" <<<"$head" | grep -o '[0-9][0-9]*' || echo 0; }
    for file in "$reports"/TEST-*.xml; do
        [[ -f "$file" ]] || continue
        head="$(grep -o -m1 '<testsuite [^>]*' "$file" || true)"
        tests=$((tests + $(attr tests)))
        failures=$((failures + $(attr failures)))
        errors=$((errors + $(attr errors)))
        skipped=$((skipped + $(attr skipped)))
    done
    echo "Tests run: $tests, Failures: $failures, Errors: $errors, Skipped: $skipped"
}

# The mixed-cluster tests (5.x suite) run beside Apache RocketMQ's own
# name server and broker: their jars come from the Maven registry into
# $TARGET_DIR/apache-rocketmq (reused once there).
APACHE_ROCKETMQ_HOME="(none: SKIP_APACHE_ROCKETMQ=1)"
# (grpc5's mixed.ApacheProxyTest runs Apache's proxy in front of Ferrocket.)
versions=" ${JAVA_CLIENT_VERSIONS:-4 5 grpc5} "
if [[ ( "$versions" == *" 5 "* || "$versions" == *" grpc5 "* ) && "${SKIP_APACHE_ROCKETMQ:-0}" != "1" ]]; then
    printf '\n==> Apache RocketMQ server jars (scripts/peers/install-apache-rocketmq.sh)\n'
    APACHE_ROCKETMQ_HOME="$(TARGET_DIR="$TARGET_DIR" "$ROOT/scripts/peers/install-apache-rocketmq.sh" \
        ${APACHE_ROCKETMQ_VERSION:-} | tail -n 1)"
fi

status=0
for line in ${JAVA_CLIENT_VERSIONS:-4 5 grpc5}; do
    # A Remoting client line N is profile rocketmqN (rocketmq-client); a
    # gRPC one (grpc5) is its own profile (rocketmq-client-java).
    case "$line" in
        grpc*) profile="$line" property=rocketmq.grpc.client.version client=rocketmq-client-java prefix=grpc- ;;
        *) profile="rocketmq$line" property=rocketmq.client.version client=rocketmq-client prefix= ;;
    esac
    version="$(sed -n "/<id>$profile<\/id>/,/<\/profile>/s/.*<$property>\(.*\)<\/$property>.*/\1/p" \
        "$ROOT/tests/interop-java/pom.xml")"
    if [[ -z "$version" ]]; then
        echo "error: no profile $profile in tests/interop-java/pom.xml" >&2
        exit 1
    fi
    build_dir="$TARGET_DIR/interop-java/$prefix$version"
    home="$build_dir/home"
    rm -rf "$home" "$build_dir/surefire-reports"
    # The test JVM's java.io.tmpdir (pom.xml): Netty's keys, mqadmin's files.
    mkdir -p "$home/tmp"
    printf '\n==> Java interop suite, %s %s (server and client logs under %s)\n' "$client" "$version" "$home"
    started=$SECONDS
    # shellcheck disable=SC2086 # MVN_ARGS is split on purpose.
    if FERROCKET_BIN="$FERROCKET_BIN" FERROCKET_INTEROP_HOME="$home" \
        APACHE_ROCKETMQ_HOME="$APACHE_ROCKETMQ_HOME" \
        mvn -B -q -Dstyle.color=never -f "$ROOT/tests/interop-java/pom.xml" -P "$profile" \
        -Dmaven.repo.local="$TARGET_DIR/m2" \
        -Dinterop.build.dir="$build_dir" -Dinterop.home="$home" \
        -Dferrocket.bin="$FERROCKET_BIN" \
        ${MVN_ARGS:-} test; then
        result=passed
    else
        result=FAILED
        status=1
    fi
    echo "$client $version: $(summarize "$build_dir/surefire-reports") ($result, $((SECONDS - started)) s)"
done
exit "$status"
