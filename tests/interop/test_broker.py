"""Broker interop (issue 3): the Apache C++ client sends to and consumes from
our broker. Each test uses its own topic and groups."""

import threading
from collections import defaultdict

from rocketmq.client import SendStatus

from interop_helpers import Puller, make_message, wait_until
from naming import unique_name

PULL_TIMEOUT_S = 30
PUSH_TIMEOUT_S = 90
CUSTOM_PROPERTY = "ferrocketColour"


def assert_ok(result, with_msg_id=True):
    assert result.status == SendStatus.OK, result
    if with_msg_id:
        assert result.msg_id, result
    assert result.offset >= 0, result


def by_id(received):
    table = {}
    for msg in received:
        assert msg.id not in table, f"message {msg.id} received twice: {msg} / {table[msg.id]}"
        table[msg.id] = msg
    return table


def test_send_sync_with_keys_tags_and_properties(cluster, clients, topic):
    producer = clients.producer(cluster.namesrv_addr)
    sent = []
    for i in range(24):
        result = producer.send_sync(
            make_message(topic, f"sync-{i}", keys=f"key-{i}", tags="TagSync", properties={CUSTOM_PROPERTY: f"c{i}"})
        )
        assert_ok(result)
        sent.append((i, result))
    ids = [r.msg_id for _, r in sent]
    assert len(set(ids)) == len(ids), "message ids repeat"

    consumer = clients.pull_consumer(cluster.namesrv_addr)
    received = by_id(Puller(consumer, topic, property_names=(CUSTOM_PROPERTY,)).pull(len(sent), PULL_TIMEOUT_S))
    assert sorted(received) == sorted(ids), "pulled ids differ from the send results' ids"

    last_offset = {}
    for i, result in sent:
        msg = received[result.msg_id]
        assert msg.topic == topic
        assert msg.body == f"sync-{i}".encode()
        assert msg.keys == f"key-{i}".encode()
        assert msg.tags == b"TagSync"
        assert msg.properties[CUSTOM_PROPERTY] == f"c{i}".encode()
        # The send result's offset is the queue offset the message got.
        assert msg.queue_offset == result.offset, (i, msg, result)
        # Offsets grow in send order within each queue.
        assert result.offset > last_offset.get(msg.queue_id, -1), (i, msg.queue_id, result.offset, last_offset)
        last_offset[msg.queue_id] = result.offset
        assert msg.store_timestamp >= msg.born_timestamp > 0
    # Every queue that got messages holds offsets 0..n-1 without gaps.
    per_queue = defaultdict(list)
    for msg in received.values():
        per_queue[msg.queue_id].append(msg.queue_offset)
    for queue_id, offsets in per_queue.items():
        assert sorted(offsets) == list(range(len(offsets))), (queue_id, sorted(offsets))


def test_send_oneway(cluster, clients, topic):
    producer = clients.producer(cluster.namesrv_addr)
    bodies = {f"oneway-{i}".encode() for i in range(20)}
    for body in sorted(bodies):
        producer.send_oneway(make_message(topic, body, keys=body.decode(), tags="TagOneway"))

    consumer = clients.pull_consumer(cluster.namesrv_addr)
    received = Puller(consumer, topic).pull(len(bodies), PULL_TIMEOUT_S)
    assert sorted(m.body for m in received) == sorted(bodies)
    assert all(m.tags == b"TagOneway" and m.keys == m.body for m in received)


def test_send_orderly_keeps_per_queue_order(cluster, clients, topic):
    producer = clients.producer(cluster.namesrv_addr)
    order_keys = [0, 1, 2, 3, 5]
    per_key = 12
    results = defaultdict(list)
    for seq in range(per_key):
        for key in order_keys:
            result = producer.send_orderly(make_message(topic, f"{key}:{seq}", keys=f"order-{key}"), key)
            assert_ok(result)
            results[key].append(result)
    for key, key_results in results.items():
        offsets = [r.offset for r in key_results]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets), (key, offsets)

    consumer = clients.pull_consumer(cluster.namesrv_addr)
    received = Puller(consumer, topic).pull(len(order_keys) * per_key, PULL_TIMEOUT_S)
    assert len(received) == len(order_keys) * per_key
    queue_of_key = {}
    by_queue = defaultdict(list)
    for msg in received:
        key, seq = (int(x) for x in msg.body.decode().split(":"))
        queue_of_key.setdefault(key, msg.queue_id)
        assert queue_of_key[key] == msg.queue_id, f"order key {key} spread over queues"
        by_queue[msg.queue_id].append((msg.queue_offset, key, seq))
    for queue_id, entries in by_queue.items():
        entries.sort()
        seen = defaultdict(lambda: -1)
        for offset, key, seq in entries:
            assert seq == seen[key] + 1, f"queue {queue_id}: key {key} seq {seq} at offset {offset} after {seen[key]}"
            seen[key] = seq


def test_send_batch(cluster, clients, topic):
    producer = clients.producer(cluster.namesrv_addr)
    count = 16
    batch = [make_message(topic, f"batch-{i}", keys=f"bk-{i}", tags="TagBatch") for i in range(count)]
    result = producer.send_batch(batch)
    # rocketmq-client-cpp takes the result's msg_id from the batch wrapper,
    # which has no UNIQ_KEY of its own, so it is empty for every broker.
    assert_ok(result, with_msg_id=False)

    consumer = clients.pull_consumer(cluster.namesrv_addr)
    received = Puller(consumer, topic).pull(count, PULL_TIMEOUT_S)
    assert len(received) == count
    assert {m.queue_id for m in received} == {received[0].queue_id}, "a batch goes to one queue"
    received.sort(key=lambda m: m.queue_offset)
    assert [m.body for m in received] == [f"batch-{i}".encode() for i in range(count)]
    assert [m.keys for m in received] == [f"bk-{i}".encode() for i in range(count)]
    assert all(m.tags == b"TagBatch" for m in received)
    offsets = [m.queue_offset for m in received]
    assert offsets == list(range(offsets[0], offsets[0] + count))
    assert result.offset == offsets[0]
    assert len({m.id for m in received}) == count


def test_pull_consumer_tag_expression_filters(cluster, clients, topic):
    producer = clients.producer(cluster.namesrv_addr)
    for i in range(10):
        for tag in ("TagA", "TagB", "TagC"):
            assert_ok(producer.send_sync(make_message(topic, f"{tag}-{i}", tags=tag)))

    only_a = Puller(clients.pull_consumer(cluster.namesrv_addr), topic, expression="TagA").pull(10, PULL_TIMEOUT_S)
    assert sorted(m.body for m in only_a) == sorted(f"TagA-{i}".encode() for i in range(10))

    a_or_c = Puller(clients.pull_consumer(cluster.namesrv_addr), topic, expression="TagA || TagC").pull(
        20, PULL_TIMEOUT_S
    )
    assert sorted(m.tags for m in a_or_c) == [b"TagA"] * 10 + [b"TagC"] * 10

    everything = Puller(clients.pull_consumer(cluster.namesrv_addr), topic).pull(30, PULL_TIMEOUT_S)
    assert len(everything) == 30


def test_push_consumer_clustering_receives_everything(cluster, clients, topic):
    producer = clients.producer(cluster.namesrv_addr)
    # Sent before the consumer group exists: a new group reads from the
    # start of a queue whose first message is still at offset 0 (the Java
    # broker answers QUERY_CONSUMER_OFFSET with 0 then).
    before = {}
    for i in range(10):
        result = producer.send_sync(make_message(topic, f"before-{i}", keys=f"pk-{i}", tags="TagPush"))
        assert_ok(result)
        before[result.msg_id] = f"before-{i}".encode()

    seen = {}
    lock = threading.Lock()

    def on_message(msg):
        with lock:
            seen[msg.id] = (msg.body, msg.tags, msg.keys)

    clients.push_consumer(cluster.namesrv_addr, topic, on_message, expression="TagPush")

    after = {}
    for i in range(10):
        result = producer.send_sync(make_message(topic, f"after-{i}", keys=f"pk-{10 + i}", tags="TagPush"))
        assert_ok(result)
        after[result.msg_id] = f"after-{i}".encode()

    expected = {**before, **after}

    def all_seen():
        with lock:
            return set(expected) <= set(seen)

    wait_until(all_seen, PUSH_TIMEOUT_S, interval_s=0.2)
    with lock:
        missing_before = sorted(before[i].decode() for i in before if i not in seen)
        missing_after = sorted(after[i].decode() for i in after if i not in seen)
        assert not missing_before and not missing_after, (
            f"push consumer missed, of those sent before it started: {missing_before}; "
            f"of those sent while it ran: {missing_after}"
        )
        for msg_id, body in expected.items():
            got_body, tags, _keys = seen[msg_id]
            assert got_body == body
            assert tags == b"TagPush"
        assert set(seen) == set(expected), f"unexpected messages: {set(seen) - set(expected)}"


def test_auto_create_topic(autocreate_cluster, clients):
    topic = unique_name("AutoTopic")
    producer = clients.producer(autocreate_cluster.namesrv_addr)
    for i in range(5):
        assert_ok(producer.send_sync(make_message(topic, f"auto-{i}")))
    received = Puller(clients.pull_consumer(autocreate_cluster.namesrv_addr), topic).pull(5, PULL_TIMEOUT_S)
    assert sorted(m.body for m in received) == sorted(f"auto-{i}".encode() for i in range(5))
