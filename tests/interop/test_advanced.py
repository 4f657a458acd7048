"""Timers, message query and compressed bodies with the Apache RocketMQ C++
client (PyPI rocketmq==0.4.4).

The 0.4.4 binding has no timer or query API: timers are asked for with the
TIMER_DELAY_SEC property (just a property to the client), and messages are
looked up with `ferrocket admin message ...` and raw Remoting requests.
"""

import time

from interop_helpers import Puller, make_message
from remoting import RemotingConnection

QUERY_MESSAGE = 12
SUCCESS = 0
QUERY_NOT_FOUND = 22
PULL_TIMEOUT_S = 30
# A delivered timer message must arrive within this long after it is due
# (plus the pull loop's own round trip on a busy machine).
LATE_BOUND_S = 1.0
PULL_SLACK_S = 0.5


def offset_msg_id(broker_addr, commit_log_offset):
    """The offset message id: store IP (4 bytes), port (4), CommitLog offset (8), hex."""
    host, port = broker_addr.rsplit(":", 1)
    ip = bytes(int(part) for part in host.split("."))
    return (ip + int(port).to_bytes(4, "big") + commit_log_offset.to_bytes(8, "big")).hex().upper()


def field(output, name):
    """Values of `Name:` lines in `ferrocket admin message` output."""
    return [line[len(name) :].strip() for line in output.splitlines() if line.startswith(name)]


def test_query_by_key_unique_key_id_and_offset(cluster, clients, topic):
    producer = clients.producer(cluster.namesrv_addr)
    sent = {}
    for name, keys in (("a", "order-a shared"), ("b", "order-b shared"), ("c", "order-c")):
        result = producer.send_sync(make_message(topic, f"body-{name}", keys=keys, tags="Q"))
        sent[name] = result.msg_id
    consumer = clients.pull_consumer(cluster.namesrv_addr)
    pulled = {m.body.decode(): m for m in Puller(consumer, topic).pull(3, PULL_TIMEOUT_S)}
    assert sorted(pulled) == ["body-a", "body-b", "body-c"]

    out = cluster.admin("message", "query-by-key", "-t", topic, "-k", "order-a").stdout
    assert field(out, "Message Body:") == ["body-a"], out
    assert field(out, "MsgId:") == [sent["a"]], out
    assert "KEYS=order-a shared" in out, out

    out = cluster.admin("message", "query-by-key", "-t", topic, "-k", "shared").stdout
    assert sorted(field(out, "Message Body:")) == ["body-a", "body-b"], out

    out = cluster.admin("message", "query-by-unique-key", "-t", topic, "-k", sent["c"]).stdout
    assert field(out, "Message Body:") == ["body-c"], out
    assert field(out, "Topic:") == [topic], out

    message_b = pulled["body-b"]
    offset_id = offset_msg_id(cluster.broker_addr, message_b.commit_log_offset)
    out = cluster.admin("message", "query-by-id", "--id", offset_id).stdout
    assert field(out, "Message Body:") == ["body-b"], out
    assert field(out, "OffsetID:") == [offset_id], out
    assert field(out, "MsgId:") == [sent["b"]], out
    assert field(out, "Found by:") == ["offset message id"], out

    # The msg_id the C++ client prints is a unique key; read as an offset id
    # it names a host that is no broker. Without a topic nothing is asked
    # and the tool says what to give; with one, the unique key is found.
    refused = cluster.admin("message", "query-by-id", "--id", sent["c"], check=False)
    assert refused.returncode != 0, refused
    assert "not a broker the name server lists" in refused.stderr, refused.stderr
    assert "-t TOPIC" in refused.stderr, refused.stderr
    out = cluster.admin("message", "query-by-id", "--id", sent["c"], "-t", topic).stdout
    assert field(out, "Message Body:") == ["body-c"], out
    assert field(out, "Found by:") == ["unique key (the producer's message id)"], out

    out = cluster.admin(
        "message",
        "query-by-offset",
        "-t",
        topic,
        "-q",
        str(message_b.queue_id),
        "-o",
        str(message_b.queue_offset),
    ).stdout
    assert field(out, "Message Body:") == ["body-b"], out

    missing = cluster.admin("message", "query-by-key", "-t", topic, "-k", "no-such-key", check=False)
    assert missing.returncode != 0
    assert "QUERY_NOT_FOUND" in missing.stderr, missing.stderr


def test_query_message_wire_answers(cluster, clients, topic):
    producer = clients.producer(cluster.namesrv_addr)
    result = producer.send_sync(make_message(topic, "wire", keys="wire-key"))
    conn = RemotingConnection(cluster.broker_addr)
    try:
        fields = {"topic": topic, "key": "wire-key", "maxNum": 32, "beginTimestamp": 0, "endTimestamp": 2**62}
        header, body = conn.request(QUERY_MESSAGE, fields)
        assert header["code"] == SUCCESS, header
        assert int(header["extFields"]["indexLastUpdatePhyoffset"]) >= 0
        assert b"wire" in body and result.msg_id.encode() in body
        unique = {**fields, "key": result.msg_id, "_UNIQUE_KEY_QUERY": "true"}
        header, body = conn.request(QUERY_MESSAGE, unique)
        assert header["code"] == SUCCESS, header
        header, body = conn.request(QUERY_MESSAGE, {**fields, "key": "unknown-key"})
        assert header["code"] == QUERY_NOT_FOUND, header
        assert body == b""
    finally:
        conn.close()


def test_timer_property_from_the_cpp_client(cluster, clients, topic):
    producer = clients.producer(cluster.namesrv_addr)
    sent = {}
    for delay in (1, 2, 3):
        before = time.time()
        producer.send_sync(make_message(topic, f"timer-{delay}", properties={"TIMER_DELAY_SEC": str(delay)}))
        sent[f"timer-{delay}"] = (before + delay, time.time() + delay)
    consumer = clients.pull_consumer(cluster.namesrv_addr)
    puller = Puller(consumer, topic, property_names=("TIMER_OUT_MS",))
    arrived = {}
    deadline = time.monotonic() + PULL_TIMEOUT_S
    while len(arrived) < len(sent) and time.monotonic() < deadline:
        for message in puller.drain_once():
            arrived.setdefault(message.body.decode(), []).append((time.time(), message))
        time.sleep(0.05)
    assert sorted(arrived) == sorted(sent), arrived
    for body, (earliest_due, latest_due) in sent.items():
        (at, message), = arrived[body]
        due_ms = int(message.properties["TIMER_OUT_MS"])
        assert at >= earliest_due, (body, at, earliest_due)
        assert message.store_timestamp >= due_ms, (body, message.store_timestamp, due_ms)
        assert message.store_timestamp <= due_ms + LATE_BOUND_S * 1000, (body, message.store_timestamp, due_ms)
        assert at <= latest_due + LATE_BOUND_S + PULL_SLACK_S, (body, at, latest_due)


def test_compressed_bodies_are_stored_and_delivered_intact(cluster, clients, topic):
    producer = clients.producer(cluster.namesrv_addr)
    # Over the C++ client's 4 KiB threshold: it sends the body zlib-compressed
    # with sysFlag bit 0x1 set, and inflates it again when consuming.
    body = ("compressible " * 2000).encode()
    result = producer.send_sync(make_message(topic, body, keys="compressed-1"))
    consumer = clients.pull_consumer(cluster.namesrv_addr)
    (message,) = Puller(consumer, topic).pull(1, PULL_TIMEOUT_S)
    assert message.body == body
    out = cluster.admin("message", "query-by-unique-key", "-t", topic, "-k", result.msg_id).stdout
    (sys_flag,) = field(out, "System Flag:")
    assert int(sys_flag) & 0x1, f"stored without the compressed flag: {out}"
    (size,) = field(out, "Body Size:")
    assert int(size) < len(body), out
