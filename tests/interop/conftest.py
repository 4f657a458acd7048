"""Fixtures for the interop suite: real `ferrocket` processes on free
127.0.0.1 ports, driven by the Apache RocketMQ C++ client (PyPI
`rocketmq==0.4.4`, which bundles librocketmq.so).

Every server process is started here, recorded by pid, and stopped by pid
(SIGTERM, then SIGKILL after a grace period) at fixture teardown, at exit, and
by the per-test watchdog, so nothing outlives the run even when a test fails.

Environment:
  FERROCKET_BIN           the binary under test (default target/debug/ferrocket)
  FERROCKET_INTEROP_HOME  where server logs and the C++ client's logs go
                          (default: a new temporary directory)
  FERROCKET_TEST_TIMEOUT_S  per-test watchdog (default 240)
"""

import atexit
import faulthandler
import os
import signal
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from naming import unique_name

READY_TIMEOUT_S = 60
STOP_GRACE_S = 10
PORT_RETRIES_MAX = 3
TEST_TIMEOUT_S = int(os.environ.get("FERROCKET_TEST_TIMEOUT_S", "240"))
# Small CommitLog segments, so a test broker does not preallocate 1 GiB.
COMMIT_LOG_SEGMENT_BYTES = 64 * 1024 * 1024
# How much of each server's log a failure report shows.
LOG_TAIL_LINES = 80
# The C++ client's own timeout for one send, milliseconds.
SEND_TIMEOUT_MS = 5000

REPO_ROOT = Path(__file__).resolve().parents[2]

# pid -> ServerProcess, for every server started and not yet reaped.
_LIVE = {}
_LIVE_LOCK = threading.Lock()


def ferrocket_bin():
    path = os.environ.get("FERROCKET_BIN") or str(REPO_ROOT / "target" / "debug" / "ferrocket")
    if not os.access(path, os.X_OK):
        pytest.exit(f"ferrocket binary not found at {path}; build it or set FERROCKET_BIN", returncode=2)
    return path


def interop_home():
    return Path(os.environ["FERROCKET_INTEROP_HOME"])


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_port_other_than(taken):
    """A free port that is not `taken` (the OS may hand one out twice)."""
    while True:
        port = free_port()
        if port != taken:
            return port


# --------------------------------------------------------------------------
# Session setup: keep the C++ client out of the real home directory.


# Set when this session created the home directory itself, so it can remove
# it after a passing run (a failing run keeps it: it holds the logs).
_CREATED_HOME = None


# The session's config, for the watchdog (it must get past output capture).
_CONFIG = None


def pytest_configure(config):
    global _CREATED_HOME, _CONFIG
    _CONFIG = config
    home = os.environ.get("FERROCKET_INTEROP_HOME")
    if not home:
        home = tempfile.mkdtemp(prefix="ferrocket-interop-")
        _CREATED_HOME = home
    Path(home).mkdir(parents=True, exist_ok=True)
    os.environ["FERROCKET_INTEROP_HOME"] = home
    # rocketmq-client-cpp writes logs to $HOME/logs/rocketmq-cpp and route
    # snapshots under $HOME as well; it reads HOME when the first client
    # starts, after this.
    os.environ["HOME"] = home


def pytest_sessionfinish(session, exitstatus):
    _stop_all_live()
    if _CREATED_HOME and exitstatus == 0 and not os.environ.get("FERROCKET_INTEROP_KEEP"):
        shutil.rmtree(_CREATED_HOME, ignore_errors=True)


def pytest_report_header(config):
    return [
        f"ferrocket binary: {os.environ.get('FERROCKET_BIN', '(default) target/debug/ferrocket')}",
        f"server and C++ client logs: {os.environ['FERROCKET_INTEROP_HOME']}",
    ]


# --------------------------------------------------------------------------
# Server processes.


class ServerProcess:
    """One `ferrocket` child, its output going to a log file."""

    def __init__(self, role, args, workdir, port):
        self.role = role
        self.port = port
        self.addr = f"127.0.0.1:{port}"
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.workdir / f"{role}-{port}.log"
        env = dict(os.environ)
        env["HOME"] = str(self.workdir)
        env.setdefault("RUST_LOG", "info")
        env["NO_COLOR"] = "1"
        with open(self.log_path, "ab") as log:
            self.popen = subprocess.Popen(
                [ferrocket_bin(), *args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.workdir,
            )
        self.pid = self.popen.pid
        with _LIVE_LOCK:
            _LIVE[self.pid] = self
            _STARTED_IN_TEST.append(self)

    def log_text(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines=LOG_TAIL_LINES):
        return "\n".join(self.log_text().splitlines()[-lines:])

    def wait_listening(self, timeout_s=READY_TIMEOUT_S):
        needle = f"ferrocket {self.role} listening on {self.addr}"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if needle in self.log_text():
                return
            if self.popen.poll() is not None:
                raise RuntimeError(
                    f"{self.role} exited with {self.popen.returncode} before listening; "
                    f"its output:\n{self.log_text()}"
                )
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.role} did not print {needle!r} within {timeout_s} s; its output:\n{self.log_text()}")

    def running(self):
        return self.popen.poll() is None

    def stop(self):
        """SIGTERM by pid, SIGKILL after the grace period. Returns the exit code."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                sys.stderr.write(f"{self.role} (pid {self.pid}) ignored SIGTERM; sending SIGKILL\n")
                self.popen.kill()
                self.popen.wait()
        with _LIVE_LOCK:
            _LIVE.pop(self.pid, None)
        return self.popen.returncode


def start_server(role, make_args, workdir):
    """Starts `role` on a free port, retrying when the port got taken."""
    last_error = None
    for _ in range(PORT_RETRIES_MAX):
        port = free_port()
        server = ServerProcess(role, make_args(port), workdir, port)
        try:
            server.wait_listening()
            return server
        except RuntimeError as error:
            server.stop()
            if "Address already in use" not in str(error) and "os error 98" not in str(error):
                raise
            last_error = error
    raise RuntimeError(f"{role} found no free port in {PORT_RETRIES_MAX} tries: {last_error}")


def start_namesrv(workdir, extra_args=()):
    return start_server(
        "namesrv",
        lambda port: ["namesrv", "--listen-addr", "127.0.0.1", "--listen-port", str(port), *extra_args],
        workdir,
    )


def start_broker(workdir, namesrv_addr, auto_create_topic, broker_name, extra_args=()):
    store = Path(workdir) / "store"
    return start_server(
        "broker",
        lambda port: [
            "broker",
            "--listen-addr", "127.0.0.1",
            "--listen-port", str(port),
            "--broker-ip1", "127.0.0.1",
            "--namesrv-addr", namesrv_addr,
            "--store-path-root-dir", str(store),
            "--broker-name", broker_name,
            "--auto-create-topic-enable", "true" if auto_create_topic else "false",
            "--mapped-file-size-commit-log", str(COMMIT_LOG_SEGMENT_BYTES),
            # Test data must not depend on how full the host's disk is (at
            # Java's default 85% a broker deletes unexpired segments).
            "--set", "diskSpaceCleanForciblyRatio=100",
            # The HA listener's port is the test's choice (not listenPort + 1).
            *(() if any(str(a).startswith("haListenPort=") for a in extra_args)
              else ("--set", f"haListenPort={free_port_other_than(port)}")),
            *extra_args,
        ],
        workdir,
    )


def _stop_all_live():
    with _LIVE_LOCK:
        servers = list(_LIVE.values())
    for server in servers:
        try:
            server.stop()
        except Exception as error:  # keep stopping the others
            sys.stderr.write(f"stopping {server.role} (pid {server.pid}) failed: {error}\n")


atexit.register(_stop_all_live)


class Cluster:
    """A name server and (optionally) one broker registered with it."""

    def __init__(self, name, auto_create_topic=False, with_broker=True, broker_args=()):
        self.workdir = interop_home() / "servers" / unique_name(name)
        self.namesrv = start_namesrv(self.workdir / "namesrv")
        self.broker = None
        try:
            if with_broker:
                self.broker = start_broker(
                    self.workdir / "broker",
                    self.namesrv.addr,
                    auto_create_topic,
                    broker_name=unique_name("broker"),
                    extra_args=broker_args,
                )
                self.wait_registered()
        except BaseException:
            if self.broker is not None:
                self.broker.stop()
            self.namesrv.stop()
            raise

    def wait_registered(self):
        """Waits until the name server lists the broker, so a test's first
        route lookup (TBW102 for auto-create) cannot race the broker's first
        registration."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            listed = self.admin("cluster", "list", check=False)
            if listed.returncode == 0 and self.broker_addr in listed.stdout:
                return
            time.sleep(0.2)
        raise RuntimeError(
            f"broker {self.broker_addr} did not register with {self.namesrv_addr} "
            f"within {READY_TIMEOUT_S} s:\n{self.broker.log_tail()}"
        )

    @property
    def namesrv_addr(self):
        return self.namesrv.addr

    @property
    def broker_addr(self):
        assert self.broker is not None, "this cluster has no broker"
        return self.broker.addr

    def servers(self):
        return [s for s in (self.broker, self.namesrv) if s is not None]

    def admin(self, *args, check=True):
        """Runs `ferrocket admin -n NAMESRV ARGS`."""
        result = subprocess.run(
            [ferrocket_bin(), "admin", "-n", self.namesrv_addr, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "NO_COLOR": "1"},
        )
        if check and result.returncode != 0:
            raise RuntimeError(
                f"ferrocket admin {' '.join(args)} failed ({result.returncode}):\n"
                f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
            )
        return result

    def create_topic(self, topic):
        """Creates `topic` on the broker and waits until the name server routes it."""
        self.admin("topic", "create", "--topic", topic, "--broker-addr", self.broker_addr)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.admin("topic", "route", "--topic", topic, check=False).returncode == 0:
                return topic
            time.sleep(0.2)
        raise RuntimeError(f"topic {topic} created but the name server has no route for it after 30 s")

    def stop(self):
        # Broker first, so it can unregister from the running name server.
        for server in self.servers():
            server.stop()


@pytest.fixture(scope="session")
def cluster():
    """Name server + broker with autoCreateTopicEnable=false (topics are
    created with `ferrocket admin`). Shared by the whole session; tests use
    unique topic and group names. One shard, so the broker runs its
    CommitLog appender on the shard's executor (appenderInShard's automatic
    choice); the other clusters use the default shard count (one per core)
    and an appender thread."""
    c = Cluster("cluster", auto_create_topic=False, broker_args=("--shards", "1"))
    yield c
    c.stop()


@pytest.fixture(scope="session")
def autocreate_cluster():
    """Name server + broker with autoCreateTopicEnable=true."""
    c = Cluster("autocreate", auto_create_topic=True)
    yield c
    c.stop()


@pytest.fixture(scope="module")
def lone_namesrv():
    """A name server with no broker at all."""
    c = Cluster("lone", with_broker=False)
    yield c
    c.stop()


@pytest.fixture
def topic(cluster):
    """A fresh topic created on the session cluster's broker."""
    return cluster.create_topic(unique_name("Topic"))


# --------------------------------------------------------------------------
# C++ clients.


# How many times a send is tried when the C++ client fails it in its own
# transport-table lock (see `_Producer`).
CPP_LOCK_TRIES_MAX = 3
CPP_LOCK_BUSY = "get timed_mutex timeout"


def _cpp_log_sizes():
    return {path: path.stat().st_size for path in _cpp_logs()}


def _cpp_logged_since(sizes, needle):
    for path in _cpp_logs():
        try:
            with open(path, "rb") as log:
                log.seek(sizes.get(path, 0))
                if needle in log.read().decode(errors="replace"):
                    return True
        except OSError:
            continue
    return False


class _Producer:
    """A started C++ producer. The C++ client (2.x) sometimes fails a send
    at once, before anything reaches a broker, when its own threads hold its
    transport-table lock: its log says "get timed_mutex timeout" and the
    send raises its catch-all "No route info of this topic". Such a send is
    tried again (at most CPP_LOCK_TRIES_MAX times); any other failure is
    raised as it is."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def send_sync(self, msg):
        for attempt in range(1, CPP_LOCK_TRIES_MAX + 1):
            sizes = _cpp_log_sizes()
            try:
                return self._inner.send_sync(msg)
            except Exception:
                if attempt == CPP_LOCK_TRIES_MAX or not _cpp_logged_since(sizes, CPP_LOCK_BUSY):
                    raise
                sys.stderr.write(f"C++ client: {CPP_LOCK_BUSY} on a send; trying it again\n")
                time.sleep(0.1)


class Clients:
    """Creates started C++ clients, each with its own instance name (its own
    client factory, connections and threads), and shuts them all down."""

    def __init__(self):
        self._started = []

    def producer(self, namesrv_addr, group=None, timeout_ms=SEND_TIMEOUT_MS):
        from rocketmq.client import Producer
        from rocketmq.ffi import dll

        producer = Producer(group or unique_name("PG"), timeout=timeout_ms)
        producer.set_namesrv_addr(namesrv_addr)
        dll.SetProducerInstanceName(producer._handle, unique_name("p").encode())
        producer.start()
        self._started.append(producer)
        return _Producer(producer)

    def pull_consumer(self, namesrv_addr, group=None):
        from rocketmq.client import PullConsumer

        consumer = PullConsumer(group or unique_name("PullCG"))
        consumer.set_namesrv_addr(namesrv_addr)
        consumer.start()
        self._started.append(consumer)
        return consumer

    def push_consumer(self, namesrv_addr, topic, callback, expression="*", group=None):
        from rocketmq.client import PushConsumer

        consumer = PushConsumer(group or unique_name("PushCG"))
        consumer.set_namesrv_addr(namesrv_addr)
        consumer.set_instance_name(unique_name("c"))
        consumer.set_thread_count(2)
        consumer.subscribe(topic, callback, expression)
        consumer.start()
        self._started.append(consumer)
        return consumer

    def shutdown_all(self):
        while self._started:
            client = self._started.pop()
            try:
                client.shutdown()
            except Exception as error:
                sys.stderr.write(f"shutting down {type(client).__name__} failed: {error}\n")


@pytest.fixture
def clients():
    c = Clients()
    yield c
    c.shutdown_all()


# --------------------------------------------------------------------------
# Watchdog and failure reports.


def _watchdog_fired(nodeid):
    # The test's output is being captured, and os._exit below would drop
    # it: write to the real stderr.
    capture = _CONFIG.pluginmanager.getplugin("capturemanager") if _CONFIG else None
    if capture is not None:
        capture.suspend_global_capture(in_=True)
    sys.stderr.write(
        f"\n*** {nodeid} ran longer than {TEST_TIMEOUT_S} s; dumping threads, stopping servers, exiting ***\n"
    )
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    with _LIVE_LOCK:
        servers = list(_LIVE.values())
    for server in servers:
        sys.stderr.write(f"---- {server.role} {server.addr} log tail ----\n{server.log_tail()}\n")
    sys.stderr.write(f"---- C++ client errors during this test ----\n{_cpp_errors_since_start()}\n")
    _stop_all_live()
    sys.stderr.flush()
    # A C++ call that never returns cannot be interrupted; leave for good.
    os._exit(3)


# Servers started by the running test (stopped ones too: a failing test has
# usually stopped its own servers by the time its report is made).
_STARTED_IN_TEST = []
# Where the C++ client's log ended when the running test began.
_CPP_LOG_START = {}
# How many of the C++ client's error lines a failure report shows.
CPP_LOG_LINES_MAX = 80


def _cpp_logs():
    return sorted((interop_home() / "logs" / "rocketmq-cpp").glob(f"{os.getpid()}_rocketmq-cpp.log*"))


def _cpp_errors_since_start():
    """The C++ client's error and warning lines written during the running
    test: the real reason behind a "No route info of this topic"."""
    lines = []
    for path in _cpp_logs():
        try:
            with open(path, "rb") as log:
                log.seek(_CPP_LOG_START.get(path, 0))
                text = log.read().decode(errors="replace")
        except OSError:
            continue
        lines += [line for line in text.splitlines() if "](error)" in line or "](warn" in line]
    return "\n".join(lines[-CPP_LOG_LINES_MAX:])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    with _LIVE_LOCK:
        _STARTED_IN_TEST.clear()
    _CPP_LOG_START.clear()
    for path in _cpp_logs():
        _CPP_LOG_START[path] = path.stat().st_size
    timer = threading.Timer(TEST_TIMEOUT_S, _watchdog_fired, args=(item.nodeid,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        with _LIVE_LOCK:
            servers = list(_LIVE.values())
            servers += [server for server in _STARTED_IN_TEST if server.pid not in _LIVE]
        cpp_errors = _cpp_errors_since_start()
        if cpp_errors:
            report.sections.append(("C++ client errors during this test", cpp_errors))
        for server in servers:
            report.sections.append(
                (f"{server.role} {server.addr} (pid {server.pid}) log tail", server.log_tail())
            )
