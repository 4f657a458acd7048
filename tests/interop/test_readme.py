"""The README's Quick start, run as a newcomer would: `ferrocket start`
with the README's port flags, then the README's own Python producer and
consumer (read from README.md, so they cannot drift from it); and the
sample `conf/namesrv.conf` and `conf/broker.conf` starting the servers.

The only change made to the README's code is the name server address: the
test's servers listen on ports the test chose, never on 9876."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import (
    COMMIT_LOG_SEGMENT_BYTES,
    REPO_ROOT,
    ServerProcess,
    ferrocket_bin,
    free_port,
    interop_home,
    start_server,
)
from naming import unique_name

README = REPO_ROOT / "README.md"
README_NAMESRV = "127.0.0.1:9876"
# How long the consumer may take to receive the first message.
RECEIVE_TIMEOUT_S = 60
# Pause between the producer's runs while the consumer is not yet receiving.
PRODUCER_RETRY_S = 2
# How long a stopped consumer may take to exit.
CONSUMER_EXIT_TIMEOUT_S = 30


def readme_snippet(name):
    """The ```python block right after `<!-- quickstart:NAME -->`."""
    text = README.read_text()
    match = re.search(
        r"<!-- quickstart:" + re.escape(name) + r" -->\s*```python\n(.*?)```", text, re.S
    )
    assert match, f"README.md has no quickstart:{name} block"
    return match.group(1)


def with_namesrv(code, namesrv_addr):
    assert README_NAMESRV in code, "the README's example names 127.0.0.1:9876"
    return code.replace(README_NAMESRV, namesrv_addr)


def client_env(workdir):
    env = dict(os.environ)
    # The C++ client writes its logs under $HOME/logs/rocketmq-cpp.
    env["HOME"] = str(workdir)
    return env


def wait_registered(namesrv_addr, broker_addr, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    out = ""
    while time.monotonic() < deadline:
        result = subprocess.run(
            [ferrocket_bin(), "admin", "-n", namesrv_addr, "cluster", "list"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        out = result.stdout + result.stderr
        if broker_addr in result.stdout:
            return
        time.sleep(0.2)
    raise AssertionError(f"broker {broker_addr} never registered with {namesrv_addr}:\n{out}")


class Consumer:
    """The README's consumer as a child process; its stdout collected."""

    def __init__(self, code, workdir):
        self.lines = []
        self.popen = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=client_env(workdir),
            cwd=workdir,
            # As at a terminal: a run started in the background (a shell
            # without job control) ignores SIGINT, and Python then keeps
            # ignoring it, so Ctrl-C would never reach the snippet.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.popen.stdout:
            self.lines.append(line.rstrip("\n"))

    def received(self, body):
        return any(line.startswith("received ") and line.endswith(" " + body) for line in self.lines)

    def interrupt(self):
        """Ctrl-C, as the README says; returns the exit code."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout=CONSUMER_EXIT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pass
            if self.popen.poll() is None:
                self.popen.kill()
                self.popen.wait()
                raise AssertionError("the README's consumer ignored Ctrl-C:\n" + "\n".join(self.lines))
        self.reader.join(timeout=5)
        return self.popen.returncode


def run_producer(code, workdir):
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=client_env(workdir),
        cwd=workdir,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SendResult(status=<SendStatus.OK: 0>" in result.stdout, result.stdout
    return result.stdout


def produce_until_received(namesrv_addr, workdir):
    producer = with_namesrv(readme_snippet("producer"), namesrv_addr)
    consumer = Consumer(with_namesrv(readme_snippet("consumer"), namesrv_addr), workdir)
    try:
        deadline = time.monotonic() + RECEIVE_TIMEOUT_S
        while not consumer.received("hello"):
            assert time.monotonic() < deadline, "the consumer printed:\n" + "\n".join(consumer.lines)
            assert consumer.popen.poll() is None, "the consumer exited:\n" + "\n".join(consumer.lines)
            run_producer(producer, workdir)
            time.sleep(PRODUCER_RETRY_S)
    finally:
        code = consumer.interrupt()
    assert code == 0, "the consumer did not exit cleanly on Ctrl-C:\n" + "\n".join(consumer.lines)


def test_quick_start_with_ferrocket_start():
    workdir = interop_home() / "readme" / unique_name("start")
    workdir.mkdir(parents=True)
    namesrv_port = free_port()
    namesrv_addr = f"127.0.0.1:{namesrv_port}"
    broker_port = free_port()
    start = ServerProcess(
        "broker",
        [
            "start",
            "--namesrv-port", str(namesrv_port),
            "--broker-port", str(broker_port),
            "--data-dir", str(workdir / "data"),
            # Small segments and a port of the test's choosing for the HA
            # listener; everything else is the README's command.
            "--broker-set", f"mappedFileSizeCommitLog={COMMIT_LOG_SEGMENT_BYTES}",
            "--broker-set", f"haListenPort={free_port()}",
        ],
        workdir,
        broker_port,
    )
    try:
        start.wait_listening()
        wait_registered(namesrv_addr, f"127.0.0.1:{broker_port}")
        produce_until_received(namesrv_addr, workdir)
    finally:
        code = start.stop()
    assert code == 0, f"`ferrocket start` did not stop cleanly:\n{start.log_tail()}"


def test_sample_configs_start_the_servers():
    workdir = interop_home() / "readme" / unique_name("conf")
    workdir.mkdir(parents=True)
    namesrv_conf = str(REPO_ROOT / "conf" / "namesrv.conf")
    broker_conf = str(REPO_ROOT / "conf" / "broker.conf")
    namesrv = start_server(
        "namesrv",
        lambda port: ["namesrv", "-c", namesrv_conf, "--listen-port", str(port)],
        workdir / "namesrv",
    )
    try:
        broker = start_server(
            "broker",
            lambda port: [
                "broker", "-c", broker_conf,
                "--listen-port", str(port),
                "--namesrv-addr", namesrv.addr,
                "--set", f"haListenPort={free_port()}",
                "--set", f"mappedFileSizeCommitLog={COMMIT_LOG_SEGMENT_BYTES}",
            ],
            workdir / "broker",
        )
        try:
            for server in (namesrv, broker):
                assert "unknown setting" not in server.log_text(), server.log_text()
            wait_registered(namesrv.addr, broker.addr)
            # The sample's relative storePathRootDir is under the broker's
            # working directory.
            assert (workdir / "broker" / "data" / "broker").is_dir()
            run_producer(with_namesrv(readme_snippet("producer"), namesrv.addr), workdir)
        finally:
            assert broker.stop() == 0, broker.log_tail()
    finally:
        namesrv.stop()
