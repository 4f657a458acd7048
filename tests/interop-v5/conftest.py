"""Fixtures for the RocketMQ 5 (gRPC) suite: a name server and broker from
tests/interop's harness (same process handling: free 127.0.0.1 ports,
stopped by pid), and a gRPC endpoint in front of them (`ferrocket proxy`
or the broker's own port), driven by the
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
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REMOTING_SUITE = HERE.parent / "interop"
sys.path.insert(0, str(REMOTING_SUITE))

if "FERROCKET_INTEROP_HOME" not in os.environ:
    os.environ["FERROCKET_INTEROP_HOME"] = tempfile.mkdtemp(prefix="ferrocket-v5-")


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
    """Name server and broker with a gRPC endpoint in front of them:
    `endpoint="proxy"`, a `ferrocket proxy` process; `"broker"`, the
    broker's own port (`enableProxy=true`), calling the broker in process
    (`proxyMode=local`) or over loopback Remoting (`proxyMode=cluster`)."""

    def __init__(self, endpoint="proxy", proxy_mode="local"):
        in_broker = endpoint == "broker"
        # The broker's Prometheus endpoint: how many requests it answered
        # in process.
        self.metrics_port = harness.free_port()
        # Transaction checks soon after a half message, so the orphaned
        # transaction test is quick.
        broker_args = (
            "--shards", "2" if in_broker else "1",
            "--set", "transactionTimeOut=2000",
            "--set", "transactionCheckInterval=1000",
            "--set", "metricsExporterType=PROM",
            "--set", f"metricsPromExporterPort={self.metrics_port}",
            *(("--set", "enableProxy=true", "--set", f"proxyMode={proxy_mode}") if in_broker else ()),
        )
        name = f"v5-broker-{proxy_mode}" if in_broker else "v5"
        self.remoting = harness.Cluster(name, auto_create_topic=False, broker_args=broker_args)
        self.proxy = None
        if in_broker:
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

    def in_process_calls(self):
        """Requests the broker answered in process, all shards together."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as answer:
            text = answer.read().decode()
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("ferrocket_shard_in_process_calls_total{")
        )

    def stop(self):
        if self.proxy:
            self.proxy.stop()
        self.remoting.stop()


# Every test of the `v5` fixture runs against both endpoints: the proxy
# process and the broker's own port in local mode.
@pytest.fixture(scope="session", params=["proxy", "broker"])
def v5(request):
    cluster = V5Cluster(endpoint=request.param)
    yield cluster
    cluster.stop()


@pytest.fixture
def topic(v5):
    return v5.create_topic(harness.unique_name("V5Topic"))


@pytest.fixture(scope="session", params=["local", "cluster"])
def in_broker(request):
    """The broker's own endpoint in each `proxyMode`."""
    cluster = V5Cluster(endpoint="broker", proxy_mode=request.param)
    cluster.mode = request.param
    yield cluster
    cluster.stop()
