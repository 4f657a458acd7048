"""Fixtures for the RocketMQ 5 (gRPC) suite: a name server and broker from
tests/interop's harness (same process handling: free 127.0.0.1 ports,
stopped by pid), and `ferrocket proxy` in front of them, driven by the
official Python v5 client (PyPI rocketmq-python-client==5.1.2).

Environment (set by scripts/test-all.sh):
  FERROCKET_BIN           the binary under test
  FERROCKET_INTEROP_HOME  where server logs go
  FERROCKET_CPP_PYTHON    the tests/interop venv's python (the C++ client),
                          for the cross-protocol tests
"""

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REMOTING_SUITE = HERE.parent / "interop"
sys.path.insert(0, str(REMOTING_SUITE))

os.environ.setdefault("FERROCKET_INTEROP_HOME", tempfile.mkdtemp(prefix="ferrocket-v5-"))


def _load_remoting_harness():
    """tests/interop's conftest as a plain module: its server classes, not
    its pytest hooks (both suites are separate pytest runs)."""
    spec = importlib.util.spec_from_file_location("remoting_harness", REMOTING_SUITE / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


harness = _load_remoting_harness()


def start_proxy(workdir, namesrv_addr):
    return harness.start_server(
        "proxy",
        lambda port: ["proxy", "--namesrv-addr", namesrv_addr, "--listen-addr", "127.0.0.1",
                      "--listen-port", str(port)],
        workdir,
    )


class V5Cluster:
    """Name server, broker and the gRPC proxy in front of them; with
    `local`, no proxy process: the broker serves gRPC on its own port
    (`enableProxy=true`)."""

    def __init__(self, local=False):
        # Transaction checks soon after a half message, so the orphaned
        # transaction test is quick.
        broker_args = (
            "--shards", "2" if local else "1",
            "--set", "transactionTimeOut=2000",
            "--set", "transactionCheckInterval=1000",
            *(("--set", "enableProxy=true") if local else ()),
        )
        name = "v5-local" if local else "v5"
        self.remoting = harness.Cluster(name, auto_create_topic=False, broker_args=broker_args)
        self.proxy = None
        if local:
            return
        try:
            self.proxy = start_proxy(self.remoting.workdir / "proxy", self.remoting.namesrv_addr)
        except BaseException:
            self.remoting.stop()
            raise

    @property
    def endpoint(self):
        return self.proxy.addr if self.proxy else self.remoting.broker_addr

    @property
    def namesrv_addr(self):
        return self.remoting.namesrv_addr

    def create_topic(self, topic):
        return self.remoting.create_topic(topic)

    def stop(self):
        if self.proxy:
            self.proxy.stop()
        self.remoting.stop()


@pytest.fixture(scope="session")
def v5():
    cluster = V5Cluster()
    yield cluster
    cluster.stop()


@pytest.fixture
def topic(v5):
    return v5.create_topic(harness.unique_name("V5Topic"))


@pytest.fixture(scope="session")
def v5_local():
    cluster = V5Cluster(local=True)
    yield cluster
    cluster.stop()
