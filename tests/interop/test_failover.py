"""Automatic failover through the Apache C++ client (PyPI rocketmq 0.4.4):
one controller, a name server and three brokers of one set in controller mode
(`allAckInSyncStateSet=true`) on 127.0.0.1. The C++ producer sends with
SYNC semantics without pause; the master is killed with SIGKILL; the
controller elects an in-sync slave, which restarts as master; the producer
goes on by itself once its route names the new master, and a C++ pull
consumer reads every acknowledged message from it."""

import json
import signal
import threading
import time

from rocketmq.client import SendStatus

from conftest import interop_home, start_broker, start_namesrv, start_server
from interop_helpers import Puller, make_message, wait_until
from naming import unique_name
from remoting import RemotingConnection

CONTROLLER_GET_SYNC_STATE_DATA = 1006
AFTER_KILL_ACKS = 50
DEADLINE_S = 120


def _wait(predicate, timeout_s, what):
    def quietly():
        try:
            return predicate()
        except OSError:
            return False

    assert wait_until(quietly, timeout_s, interval_s=0.2), f"timed out waiting for {what}"


def _sync_state(controller_addr, broker_name):
    conn = RemotingConnection(controller_addr)
    try:
        _, body = conn.request(CONTROLLER_GET_SYNC_STATE_DATA, {}, json.dumps([broker_name]).encode())
    finally:
        conn.close()
    info = json.loads(body)["replicasInfoTable"].get(broker_name, {})
    in_sync = sorted(r["brokerId"] for r in info.get("inSyncReplicas", []))
    return in_sync, info.get("masterBrokerId")


class ControllerGroup:
    """A controller, a name server and three controller-mode brokers."""

    def __init__(self):
        self.workdir = interop_home() / "servers" / unique_name("failover")
        self.name = unique_name("broker")
        store = self.workdir / "controller" / "store"
        self.controller = start_server(
            "controller",
            lambda port: [
                "controller", "--listen-addr", "127.0.0.1", "--listen-port", str(port),
                "--set", f"controllerStorePath={store}",
            ],
            self.workdir / "controller",
        )
        self.servers = [self.controller]
        self.namesrv = start_namesrv(self.workdir / "namesrv")
        self.servers.append(self.namesrv)
        self.brokers = [self._broker(tag) for tag in ("a", "b", "c")]

    def _broker(self, tag):
        settings = [
            "enableControllerMode=true",
            f"controllerAddr={self.controller.addr}",
            "allAckInSyncStateSet=true",
            "syncBrokerMetadataPeriod=1000",
            "checkSyncStateSetPeriod=1000",
        ]
        args = [arg for setting in settings for arg in ("--set", setting)]
        broker = start_broker(self.workdir / tag, self.namesrv.addr, True, self.name, extra_args=args)
        self.servers.append(broker)
        return broker

    def stop(self):
        for server in reversed(self.servers):
            server.stop()


def test_the_producer_continues_on_the_new_master_and_nothing_acknowledged_is_lost(clients):
    group = ControllerGroup()
    try:
        _wait(
            lambda: _sync_state(group.controller.addr, group.name) == ([1, 2, 3], 1),
            60,
            "the three brokers in the in-sync set",
        )
        topic = unique_name("FailoverTopic")
        # Java's default send timeout (3 s): a send caught by the kill waits
        # this long before the client retries on the new route.
        producer = clients.producer(group.namesrv.addr, timeout_ms=3000)
        acked, failed = set(), [0]
        killed_at = [None]
        first_ack_after_kill = [None]
        stop = threading.Event()

        def send_forever():
            n = 0
            while not stop.is_set():
                body = f"fo-{n:06d}".encode()
                n += 1
                try:
                    result = producer.send_sync(make_message(topic, body.decode()))
                except Exception:
                    failed[0] += 1
                    time.sleep(0.05)
                    continue
                if result.status == SendStatus.OK:
                    acked.add(body)
                    if killed_at[0] is not None and first_ack_after_kill[0] is None:
                        first_ack_after_kill[0] = time.monotonic()
                else:
                    failed[0] += 1

        sender = threading.Thread(target=send_forever, daemon=True)
        sender.start()
        _wait(lambda: len(acked) >= 200, 60, "acknowledged sends before the kill")
        master = group.brokers[0]
        master.popen.send_signal(signal.SIGKILL)
        master.popen.wait()
        killed_at[0] = time.monotonic()
        before = len(acked)
        _wait(lambda: len(acked) >= before + AFTER_KILL_ACKS, DEADLINE_S, "sends acknowledged by the new master")
        stop.set()
        sender.join(timeout=30)
        outage_s = first_ack_after_kill[0] - killed_at[0]
        print(f"failover: the C++ producer's first acknowledged send came {outage_s:.1f} s after kill -9 "
              f"({failed[0]} sends failed meanwhile)")
        assert _sync_state(group.controller.addr, group.name)[1] in (2, 3)

        consumer = clients.pull_consumer(group.namesrv.addr)
        got = Puller(consumer, topic).pull(len(acked), timeout_s=90)
        missing = acked - {m.body for m in got}
        assert not missing, f"{len(missing)} of {len(acked)} acknowledged messages lost"
    finally:
        group.stop()
