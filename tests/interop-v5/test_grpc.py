"""The official Python v5 client (gRPC) against `ferrocket proxy` and the
broker's own endpoint: normal,
FIFO and delayed sends; the simple consumer's receive, ack, change of
invisible time and redelivery; and messages crossing between gRPC and the
C++ Remoting client both ways."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rocketmq import (ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer,
                      TransactionChecker, TransactionResolution)

from conftest import HERE, harness

LONG_POLL_S = 5
# The proxy's shortest invisible time for a receive.
INVISIBLE_MIN_S = 10


def config(v5):
    return ClientConfiguration(v5.endpoint, Credentials())


def message(topic, body, tag=None, keys=None, group=None, deliver_at_s=None, props=None):
    msg = Message()
    msg.topic = topic
    msg.body = body.encode() if isinstance(body, str) else body
    if tag:
        msg.tag = tag
    if keys:
        msg.keys = keys
    if group:
        msg.message_group = group
    if deliver_at_s:
        msg.delivery_timestamp = deliver_at_s
    for name, value in (props or {}).items():
        msg.add_property(name, value)
    return msg


class Clients:
    def __init__(self, v5):
        self.v5 = v5
        self.started = []

    def producer(self, topic, checker=None):
        producer = Producer(config(self.v5), (topic,), checker)
        producer.startup()
        self.started.append(producer)
        return producer

    def consumer(self, topic, expression="*"):
        group = harness.unique_name("V5Group")
        consumer = SimpleConsumer(
            config(self.v5), group, {topic: FilterExpression(expression)}, await_duration=LONG_POLL_S
        )
        consumer.startup()
        self.started.append(consumer)
        # A new group starts at the queues' ends (ConsumeInitMode.MAX) once
        # it has popped: pop once before anything is sent.
        consumer.receive(16, INVISIBLE_MIN_S)
        return consumer

    def shutdown(self):
        for client in reversed(self.started):
            try:
                client.shutdown()
            except Exception as error:  # keep shutting down the rest
                sys.stderr.write(f"shutdown failed: {error}\n")


@pytest.fixture
def clients(v5):
    made = Clients(v5)
    yield made
    made.shutdown()


def receive_all(consumer, count, timeout_s=30, invisible_s=INVISIBLE_MIN_S, ack=True):
    got = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        for msg in consumer.receive(32, invisible_s):
            got.append(msg)
            if ack:
                consumer.ack(msg)
    return got


def test_send_receive_and_ack(clients, topic):
    consumer = clients.consumer(topic)
    producer = clients.producer(topic)
    sent = {}
    for i in range(20):
        receipt = producer.send(message(topic, f"body-{i}", tag="TagA", keys=f"key-{i}", props={"n": str(i)}))
        sent[receipt.message_id] = i
    got = receive_all(consumer, 20)
    assert sorted(m.message_id for m in got) == sorted(sent)
    for msg in got:
        i = sent[msg.message_id]
        assert msg.body == f"body-{i}".encode()
        assert msg.tag == "TagA"
        assert msg.keys == {f"key-{i}"}
        assert msg.properties == {"n": str(i)}
        assert msg.topic == topic
    # All acked: nothing comes back, even after the invisible time.
    assert receive_all(consumer, 1, timeout_s=INVISIBLE_MIN_S + 3) == []


def test_tag_filter(clients, topic):
    consumer = clients.consumer(topic, expression="TagB")
    producer = clients.producer(topic)
    for i in range(10):
        producer.send(message(topic, f"f-{i}", tag="TagB" if i % 2 else "TagA"))
    got = receive_all(consumer, 5)
    assert sorted(m.body for m in got) == sorted(f"f-{i}".encode() for i in range(1, 10, 2))
    assert all(m.tag == "TagB" for m in got)


def test_fifo_messages_keep_their_group_order(clients, topic):
    consumer = clients.consumer(topic)
    producer = clients.producer(topic)
    for i in range(30):
        producer.send(message(topic, f"{i % 3}:{i}", group=f"order-{i % 3}"))
    got = receive_all(consumer, 30)
    assert len(got) == 30
    for group in range(3):
        bodies = [m.body.decode() for m in got if m.message_group == f"order-{group}"]
        numbers = [int(b.split(":")[1]) for b in bodies]
        assert numbers == sorted(numbers), f"group order-{group} out of order: {numbers}"
        assert len(numbers) == 10


def test_delayed_message_arrives_at_its_time(clients, topic):
    consumer = clients.consumer(topic)
    producer = clients.producer(topic)
    at_s = int(time.time()) + 4
    producer.send(message(topic, "later", deliver_at_s=at_s))
    got = receive_all(consumer, 1, timeout_s=30)
    assert [m.body for m in got] == [b"later"]
    assert time.time() >= at_s - 1, "delivered before its time"


def test_unacked_message_comes_back_after_its_invisible_time(clients, topic):
    consumer = clients.consumer(topic)
    producer = clients.producer(topic)
    producer.send(message(topic, "retry-me"))
    first = receive_all(consumer, 1, ack=False)
    assert [m.body for m in first] == [b"retry-me"]
    assert first[0].delivery_attempt == 1
    started = time.monotonic()
    again = receive_all(consumer, 1, timeout_s=INVISIBLE_MIN_S + 20)
    assert [m.body for m in again] == [b"retry-me"]
    assert again[0].delivery_attempt == 2
    assert time.monotonic() - started >= INVISIBLE_MIN_S - 2


def test_change_invisible_duration_then_ack(clients, topic):
    consumer = clients.consumer(topic)
    producer = clients.producer(topic)
    producer.send(message(topic, "hold-me"))
    first = receive_all(consumer, 1, ack=False)
    assert len(first) == 1
    # Extend well past the first invisible time, then ack with the new handle.
    consumer.change_invisible_duration(first[0], 60)
    consumer.ack(first[0])
    assert receive_all(consumer, 1, timeout_s=INVISIBLE_MIN_S + 5) == []


def cpp(*args, timeout_s=60):
    python = os.environ.get("FERROCKET_CPP_PYTHON")
    if not python:
        pytest.skip("FERROCKET_CPP_PYTHON (the C++ client's venv) is not set")
    return [python, str(HERE / "cpp_client.py"), *args]


def test_grpc_producer_to_cpp_consumer(clients, v5, topic):
    group = harness.unique_name("CppGroup")
    reader = subprocess.Popen(
        cpp("consume", v5.namesrv_addr, topic, group, "10", "40"),
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOME": os.environ.get("HOME", "/tmp")},
    )
    try:
        time.sleep(5)  # the push consumer's first rebalance
        producer = clients.producer(topic)
        for i in range(10):
            producer.send(message(topic, f"to-cpp-{i}"))
        out, _ = reader.communicate(timeout=60)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert sorted(out.split()) == sorted(f"to-cpp-{i}" for i in range(10))


def test_cpp_producer_to_grpc_consumer(clients, v5, topic):
    consumer = clients.consumer(topic)
    sent = subprocess.run(cpp("send", v5.namesrv_addr, topic, "10", "from-cpp"), capture_output=True, text=True, timeout=60)
    assert sent.returncode == 0, sent.stderr
    got = receive_all(consumer, 10)
    assert sorted(m.body.decode() for m in got) == sorted(f"from-cpp-{i}" for i in range(10))
    assert all(m.tag == "cpp" for m in got)


class CommitChecker(TransactionChecker):
    """Commits every orphaned half message it is asked about."""

    def __init__(self):
        self.checked = []

    def check(self, message):
        self.checked.append(message.body)
        return TransactionResolution.COMMIT


def test_transactions_commit_rollback_and_an_orphan_committed_by_the_checker(clients, topic):
    consumer = clients.consumer(topic)
    checker = CommitChecker()
    producer = clients.producer(topic, checker)
    committed = producer.begin_transaction()
    producer.send(message(topic, "tx-commit"), committed)
    committed.commit()
    rolled_back = producer.begin_transaction()
    producer.send(message(topic, "tx-rollback"), rolled_back)
    rolled_back.rollback()
    # Neither committed nor rolled back: the broker checks it, through the
    # proxy, with this producer's checker, which commits it.
    orphan = producer.begin_transaction()
    producer.send(message(topic, "tx-orphan"), orphan)
    got = receive_all(consumer, 2, timeout_s=60)
    assert sorted(m.body for m in got) == [b"tx-commit", b"tx-orphan"]
    assert b"tx-orphan" in checker.checked
    assert receive_all(consumer, 1, timeout_s=6) == [], "the rolled back message must never arrive"


def test_nodejs_client_sends_and_receives(v5, topic):
    node_dir = os.environ.get("FERROCKET_NODE_DIR")
    if not node_dir or not (Path(node_dir) / "node_modules" / "rocketmq-client-nodejs").is_dir():
        pytest.skip("FERROCKET_NODE_DIR with npm rocketmq-client-nodejs is not set up")
    script = Path(node_dir) / "send_and_receive.mjs"
    script.write_bytes((HERE / "node" / "send_and_receive.mjs").read_bytes())
    group = harness.unique_name("NodeGroup")
    ran = subprocess.run(
        ["node", str(script), v5.endpoint, topic, group, "10"],
        capture_output=True, text=True, timeout=120, cwd=node_dir,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    import json
    got = json.loads(ran.stdout.strip().splitlines()[-1])
    assert got == sorted(f"node-{i}" for i in range(10))


def test_the_broker_port_serves_grpc_beside_remoting(in_broker):
    """`enableProxy=true`: a v5 client and the C++ client use one address,
    in both proxy modes; in local mode the endpoint's calls are answered
    in process, in cluster mode over loopback Remoting."""
    topic = in_broker.create_topic(harness.unique_name("LocalTopic"))
    clients = Clients(in_broker)
    before = in_broker.in_process_calls()
    try:
        consumer = clients.consumer(topic)
        producer = clients.producer(topic)
        for i in range(5):
            producer.send(message(topic, f"local-{i}", tag="TagL"))
        sent = subprocess.run(
            cpp("send", in_broker.namesrv_addr, topic, "5", "remoting"), capture_output=True, text=True, timeout=60
        )
        assert sent.returncode == 0, sent.stderr
        got = receive_all(consumer, 10)
        expected = [f"local-{i}" for i in range(5)] + [f"remoting-{i}" for i in range(5)]
        assert sorted(m.body.decode() for m in got) == sorted(expected)
        # At least the 5 sends, the pops and the 10 acks.
        answered = in_broker.in_process_calls() - before
        if in_broker.mode == "local":
            assert answered >= 16, answered
        else:
            assert answered == 0, answered
    finally:
        clients.shutdown()
