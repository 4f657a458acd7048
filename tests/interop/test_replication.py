"""Master/slave replication through the Apache C++ client (PyPI rocketmq
0.4.4): a SYNC_MASTER and its slave on 127.0.0.1; the client sends to the
group, the master is killed with SIGKILL, and a C++ pull consumer then reads
every acknowledged message from the slave, which the client finds by itself
(the name server drops the dead master; the client falls back to the
broker name's remaining address)."""

import json
import signal
import time

from rocketmq.client import SendStatus

from conftest import free_port, interop_home, start_broker, start_namesrv
from interop_helpers import Puller, make_message
from naming import unique_name
from remoting import RemotingConnection

GET_ALL_TOPIC_CONFIG = 21
GET_BROKER_HA_STATUS = 907
MESSAGES = 300


def _wait(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _request(addr, code):
    conn = RemotingConnection(addr)
    try:
        return conn.request(code, {})
    finally:
        conn.close()


class ReplicaGroup:
    """A name server, a SYNC_MASTER and its slave (same broker name)."""

    def __init__(self):
        self.workdir = interop_home() / "servers" / unique_name("ha")
        name = unique_name("broker")
        self.namesrv = start_namesrv(self.workdir / "namesrv")
        self.servers = [self.namesrv]
        self.master = self._broker("master", name, ["brokerRole=SYNC_MASTER"])
        self.slave = self._broker("slave", name, ["brokerId=1", "brokerRole=SLAVE", "slaveReadEnable=true"])

    def _broker(self, role, name, settings):
        settings = [*settings, f"haListenPort={free_port()}"]
        args = [arg for setting in settings for arg in ("--set", setting)]
        broker = start_broker(self.workdir / role, self.namesrv.addr, True, name, extra_args=args)
        self.servers.append(broker)
        return broker

    def stop(self):
        for server in reversed(self.servers):
            server.stop()


def test_every_acknowledged_message_is_read_from_the_slave_after_the_master_dies(clients):
    group = ReplicaGroup()
    try:
        _wait(
            lambda: json.loads(_request(group.master.addr, GET_BROKER_HA_STATUS)[1])["haConnectionInfo"],
            60,
            "the slave's HA link",
        )
        topic = unique_name("HaTopic")
        producer = clients.producer(group.namesrv.addr)
        acked = set()
        for n in range(MESSAGES):
            body = f"ha-{n:04d}-" + "z" * 200
            result = producer.send_sync(make_message(topic, body))
            # SYNC_MASTER: OK means the slave has it too.
            assert result.status == SendStatus.OK, result
            acked.add(body.encode())
        # The slave learns topics from its metadata sync (every 10 s).
        _wait(
            lambda: topic.encode() in _request(group.slave.addr, GET_ALL_TOPIC_CONFIG)[1],
            60,
            "the slave's copy of the topic",
        )
        group.master.popen.send_signal(signal.SIGKILL)
        group.master.popen.wait()
        killed_at = time.monotonic()

        consumer = clients.pull_consumer(group.namesrv.addr)
        puller = Puller(consumer, topic)
        got = puller.pull(MESSAGES, timeout_s=90)
        outage_s = time.monotonic() - killed_at
        bodies = {m.body for m in got}
        missing = acked - bodies
        assert not missing, f"{len(missing)} acknowledged messages not read from the slave"
        print(f"read {len(got)} messages from the slave {outage_s:.1f} s after the master was killed")
    finally:
        group.stop()
