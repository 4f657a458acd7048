"""Consumption interop (issue 5) with the Apache C++ client (PyPI
rocketmq==0.4.4): clustering and broadcasting push consumers, orderly
consumption (LOCK_BATCH_MQ), retries and the DLQ, delay levels, offsets
across consumer and broker restarts, tag filters, and the consumer admin
commands. The C++ client has no SQL92 subscriptions; SQL92 is tested with
the Rust client in tests/consumption_sql.rs.

The module's broker runs with short delay levels (levels 1-5: 1 s, level 6:
3 s) so retries (levels 3, 4, ...) come back within a second."""

import time
from collections import Counter, defaultdict

import pytest
from rocketmq.client import SendStatus

from consumption_helpers import (
    CONSUME_SUCCESS,
    RECONSUME_LATER,
    ConsumptionCluster,
    MessageModel,
    Recorder,
    start_push_consumer,
    stop_consumer,
    wait_for,
)
from interop_helpers import Puller, make_message
from naming import unique_name

DELIVERY_TIMEOUT_S = 60
DELAY_LEVELS = "1s 1s 1s 1s 1s 3s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s"
SLOW_LEVEL = 6
SLOW_LEVEL_S = 3.0


@pytest.fixture(scope="module")
def ccluster():
    c = ConsumptionCluster(
        "consumption",
        broker_args=["--set", f"messageDelayLevel={DELAY_LEVELS}", "--set", "enablePropertyFilter=true"],
    )
    yield c
    c.stop()


def new_topic(cluster, queues=4, name=None):
    name = name or unique_name("CTopic")
    cluster.admin("topic", "create", "--topic", name, "--broker-addr", cluster.broker_addr,
                  "-r", str(queues), "-w", str(queues))
    assert wait_for(lambda: cluster.admin("topic", "route", "--topic", name, check=False).returncode == 0, 30)
    return name


def precreate_retry_topic(cluster, group):
    """The C++ client reads a topic's route 3 s after start and then every
    30 s, and rebalances every 10 s; a retry topic the broker creates at the
    first heartbeat is only consumed after that. Creating it beforehand (as
    an operator may) makes the first retry come back within a second."""
    new_topic(cluster, queues=1, name=f"%RETRY%{group}")


def send_all(producer, topic, bodies, tags=None):
    for body in bodies:
        result = producer.send_sync(make_message(topic, body, tags=tags))
        assert result.status == SendStatus.OK, result


def online_clients(cluster, group):
    result = cluster.admin("consumer", "connection", "-g", group, "-b", cluster.broker_addr, check=False)
    if result.returncode != 0:
        return 0
    return sum(1 for line in result.stdout.splitlines() if "@" in line)


def progress_rows(cluster, group, topic):
    """(queue id, broker offset, consumer offset) from `consumer progress`."""
    out = cluster.admin("consumer", "progress", "-g", group, "-t", topic, "-b", cluster.broker_addr).stdout
    rows = []
    for line in out.splitlines():
        cells = line.split()
        if cells and cells[0] == topic:
            rows.append((int(cells[2]), int(cells[3]), int(cells[4])))
    return sorted(rows)


def test_clustering_consumers_share_queues_and_take_over(ccluster, clients):
    topic = new_topic(ccluster, queues=4)
    group = unique_name("ClusterG")
    rec = Recorder()
    start_push_consumer(clients, ccluster.namesrv_addr, topic,
                        lambda m: (rec.add("a", m), CONSUME_SUCCESS)[1], group, name=unique_name("ca"))
    b = start_push_consumer(clients, ccluster.namesrv_addr, topic,
                            lambda m: (rec.add("b", m), CONSUME_SUCCESS)[1], group, name=unique_name("cb"))
    assert wait_for(lambda: online_clients(ccluster, group) == 2, 30), "both consumers registered"
    # Let NOTIFY_CONSUMER_IDS_CHANGED's rebalance settle before sending.
    wait_for(lambda: False, 3)

    producer = clients.producer(ccluster.namesrv_addr)
    first = [f"first-{i}".encode() for i in range(24)]
    send_all(producer, topic, first)
    assert wait_for(lambda: set(first) <= set(rec.bodies()), DELIVERY_TIMEOUT_S), "all consumed"
    seen = rec.snapshot()
    counts = Counter(s.body for s in seen)
    assert all(counts[b] == 1 for b in first), f"consumed more than once: {[b for b in first if counts[b] > 1]}"
    queues_of = defaultdict(set)
    for s in seen:
        queues_of[s.consumer].add(s.queue_id)
    assert queues_of["a"] and queues_of["b"], f"both consumers got queues: {dict(queues_of)}"
    assert not (queues_of["a"] & queues_of["b"]), f"a queue was shared: {dict(queues_of)}"

    # b leaves: a takes over b's queues, and nothing sent afterwards is lost.
    stop_consumer(clients, b)
    assert wait_for(lambda: online_clients(ccluster, group) == 1, 30)
    second = [f"second-{i}".encode() for i in range(24)]
    send_all(producer, topic, second)
    assert wait_for(lambda: set(second) <= set(rec.bodies("a")), DELIVERY_TIMEOUT_S), (
        f"a missed {sorted(set(second) - set(rec.bodies('a')))}"
    )
    assert len({s.queue_id for s in rec.snapshot() if s.body in second}) == 4, "a reads every queue"


def test_broadcasting_consumers_each_get_everything(ccluster, clients):
    topic = new_topic(ccluster, queues=2)
    group = unique_name("BroadcastG")
    rec = Recorder()
    for name in ("a", "b"):
        start_push_consumer(clients, ccluster.namesrv_addr, topic,
                            lambda m, n=name: (rec.add(n, m), CONSUME_SUCCESS)[1], group,
                            model=MessageModel.BROADCASTING, name=unique_name("bc" + name))
    assert wait_for(lambda: online_clients(ccluster, group) == 2, 30)
    producer = clients.producer(ccluster.namesrv_addr)
    # Broadcasting consumers start at the queue end: send probes to both
    # queues until each consumer saw one from each, then the real messages.
    def probes_seen():
        for queue in (0, 1):
            producer.send_orderly(make_message(topic, b"probe", tags="probe"), queue)
        return all({s.queue_id for s in rec.snapshot() if s.consumer == n} == {0, 1} for n in ("a", "b"))

    assert wait_for(probes_seen, 45, interval_s=0.5), "consumers never started reading"
    bodies = [f"bc-{i}".encode() for i in range(20)]
    send_all(producer, topic, bodies)
    for name in ("a", "b"):
        assert wait_for(lambda: set(bodies) <= set(rec.bodies(name)), DELIVERY_TIMEOUT_S), (
            f"{name} missed {sorted(set(bodies) - set(rec.bodies(name)))}"
        )
        counts = Counter(rec.bodies(name))
        assert all(counts[b] == 1 for b in bodies), f"{name} got duplicates: {counts}"


def test_orderly_consumer_keeps_queue_order(ccluster, clients):
    topic = new_topic(ccluster, queues=4)
    group = unique_name("OrderG")
    rec = Recorder()
    producer = clients.producer(ccluster.namesrv_addr)
    keys, per_key = 6, 10
    for seq in range(per_key):
        for key in range(keys):
            result = producer.send_orderly(make_message(topic, f"{key}:{seq}"), key)
            assert result.status == SendStatus.OK
    start_push_consumer(clients, ccluster.namesrv_addr, topic,
                        lambda m: (rec.add("o", m), CONSUME_SUCCESS)[1], group, orderly=True)
    total = keys * per_key
    assert wait_for(lambda: len(rec.snapshot()) >= total, DELIVERY_TIMEOUT_S), f"got {len(rec.snapshot())}/{total}"
    next_seq = defaultdict(int)
    last_offset = defaultdict(lambda: -1)
    for s in rec.snapshot():
        key, seq = (int(x) for x in s.body.decode().split(":"))
        assert seq == next_seq[key], f"key {key}: got seq {seq}, expected {next_seq[key]}"
        next_seq[key] += 1
        assert s.queue_offset > last_offset[s.queue_id], f"queue {s.queue_id} went back"
        last_offset[s.queue_id] = s.queue_offset
    assert all(v == per_key for v in next_seq.values())


def test_failed_message_is_retried_with_reconsume_times(ccluster, clients):
    topic = new_topic(ccluster, queues=1)
    group = unique_name("RetryG")
    precreate_retry_topic(ccluster, group)
    rec = Recorder()

    def fail_twice(msg):
        entry = rec.add("r", msg)
        return RECONSUME_LATER if entry.reconsume_times < 2 else CONSUME_SUCCESS

    producer = clients.producer(ccluster.namesrv_addr)
    result = producer.send_sync(make_message(topic, b"retry-me", tags="TagR"))
    start_push_consumer(clients, ccluster.namesrv_addr, topic, fail_twice, group)
    assert wait_for(lambda: len(rec.snapshot()) >= 3, DELIVERY_TIMEOUT_S), f"deliveries: {rec.snapshot()}"
    wait_for(lambda: False, 2)
    seen = rec.snapshot()
    assert [s.reconsume_times for s in seen] == [0, 1, 2], seen
    assert all(s.body == b"retry-me" and s.tags == b"TagR" for s in seen)
    assert all(s.topic == topic for s in seen), "the client sees the original topic"
    assert all(s.id == result.msg_id for s in seen), "the message id is kept"


def test_always_failing_message_ends_in_dlq(ccluster, clients):
    topic = new_topic(ccluster, queues=1)
    group = unique_name("DlqG")
    ccluster.group_update(group, "--retry-max-times", "2")
    precreate_retry_topic(ccluster, group)
    rec = Recorder()
    producer = clients.producer(ccluster.namesrv_addr)
    producer.send_sync(make_message(topic, b"poison", keys="poison-key"))
    start_push_consumer(clients, ccluster.namesrv_addr, topic, lambda m: (rec.add("d", m), RECONSUME_LATER)[1], group)
    dlq = f"%DLQ%{group}"

    def in_dlq():
        return ccluster.admin("topic", "route", "--topic", dlq, check=False).returncode == 0

    assert wait_for(in_dlq, DELIVERY_TIMEOUT_S), f"no DLQ topic; deliveries {rec.snapshot()}"
    dead = Puller(clients.pull_consumer(ccluster.namesrv_addr), dlq).pull(1, 30)
    assert [m.body for m in dead] == [b"poison"]
    assert dead[0].keys == b"poison-key"
    wait_for(lambda: False, 2)
    assert [s.reconsume_times for s in rec.snapshot()] == [0, 1, 2], "max 2 retries, then the DLQ"


def test_delay_level_is_not_delivered_early(ccluster, clients):
    topic = new_topic(ccluster, queues=1)
    rec = Recorder()
    start_push_consumer(clients, ccluster.namesrv_addr, topic,
                        lambda m: (rec.add("l", m), CONSUME_SUCCESS)[1], unique_name("DelayG"))
    producer = clients.producer(ccluster.namesrv_addr)
    send_all(producer, topic, [b"now"])
    assert wait_for(lambda: rec.bodies() == [b"now"], DELIVERY_TIMEOUT_S), "the consumer runs"
    msg = make_message(topic, b"later")
    msg.set_delay_time_level(SLOW_LEVEL)
    sent = time.monotonic()
    assert producer.send_sync(msg).status == SendStatus.OK
    wait_for(lambda: False, SLOW_LEVEL_S * 0.6)
    assert b"later" not in rec.bodies(), "delivered before its delay"
    assert wait_for(lambda: b"later" in rec.bodies(), DELIVERY_TIMEOUT_S), "never delivered"
    later = next(s for s in rec.snapshot() if s.body == b"later")
    assert later.at - sent >= SLOW_LEVEL_S - 0.5, f"delivered after {later.at - sent:.2f} s"


def test_consumer_restart_resumes_from_committed_offsets(ccluster, clients):
    topic = new_topic(ccluster, queues=2)
    group = unique_name("ResumeG")
    producer = clients.producer(ccluster.namesrv_addr)
    first = [f"r1-{i}".encode() for i in range(10)]
    send_all(producer, topic, first)
    rec1 = Recorder()
    c1 = start_push_consumer(clients, ccluster.namesrv_addr, topic,
                             lambda m: (rec1.add("1", m), CONSUME_SUCCESS)[1], group)
    assert wait_for(lambda: set(first) <= set(rec1.bodies()), DELIVERY_TIMEOUT_S)
    stop_consumer(clients, c1)  # persists its offsets
    assert wait_for(lambda: [r[2] for r in progress_rows(ccluster, group, topic)] ==
                    [r[1] for r in progress_rows(ccluster, group, topic)], 20), "offsets committed"
    second = [f"r2-{i}".encode() for i in range(10)]
    send_all(producer, topic, second)
    rec2 = Recorder()
    start_push_consumer(clients, ccluster.namesrv_addr, topic,
                        lambda m: (rec2.add("2", m), CONSUME_SUCCESS)[1], group)
    assert wait_for(lambda: set(second) <= set(rec2.bodies()), DELIVERY_TIMEOUT_S)
    wait_for(lambda: False, 1)
    assert not set(first) & set(rec2.bodies()), "the restarted consumer re-read committed messages"


def test_offsets_survive_broker_restart(clients):
    cluster = ConsumptionCluster("restart")
    try:
        topic = new_topic(cluster, queues=2)
        group = unique_name("KeepG")
        producer = clients.producer(cluster.namesrv_addr)
        first = [f"k1-{i}".encode() for i in range(8)]
        send_all(producer, topic, first)
        rec = Recorder()
        c1 = start_push_consumer(clients, cluster.namesrv_addr, topic,
                                 lambda m: (rec.add("1", m), CONSUME_SUCCESS)[1], group)
        assert wait_for(lambda: set(first) <= set(rec.bodies()), DELIVERY_TIMEOUT_S)
        stop_consumer(clients, c1)
        assert wait_for(lambda: sum(r[2] for r in progress_rows(cluster, group, topic)) == 8, 20)
        stop_consumer(clients, clients._started[-1])  # the producer
        cluster.restart_broker()
        assert sum(r[2] for r in progress_rows(cluster, group, topic)) == 8, "offsets kept"
        producer = clients.producer(cluster.namesrv_addr)
        second = [f"k2-{i}".encode() for i in range(8)]
        send_all(producer, topic, second)
        rec2 = Recorder()
        start_push_consumer(clients, cluster.namesrv_addr, topic,
                            lambda m: (rec2.add("2", m), CONSUME_SUCCESS)[1], group)
        assert wait_for(lambda: set(second) <= set(rec2.bodies()), DELIVERY_TIMEOUT_S)
        wait_for(lambda: False, 1)
        assert not set(first) & set(rec2.bodies()), "messages consumed before the restart came again"
    finally:
        clients.shutdown_all()
        cluster.stop()


def test_tag_filter_delivers_exactly_the_matching_messages(ccluster, clients):
    topic = new_topic(ccluster, queues=2)
    rec = Recorder()
    start_push_consumer(clients, ccluster.namesrv_addr, topic,
                        lambda m: (rec.add("t", m), CONSUME_SUCCESS)[1], unique_name("TagG"),
                        expression="TagA || TagC")
    producer = clients.producer(ccluster.namesrv_addr)
    for i in range(8):
        for tag in ("TagA", "TagB", "TagC"):
            send_all(producer, topic, [f"{tag}-{i}".encode()], tags=tag)
    wanted = {f"{t}-{i}".encode() for t in ("TagA", "TagC") for i in range(8)}
    assert wait_for(lambda: wanted <= set(rec.bodies()), DELIVERY_TIMEOUT_S)
    wait_for(lambda: False, 1)
    assert sorted(rec.bodies()) == sorted(wanted), "exactly the TagA and TagC messages, once each"


def test_admin_group_and_offset_commands(ccluster, clients):
    topic = new_topic(ccluster, queues=2)
    group = unique_name("AdminG")
    out = ccluster.group_update(group, "--retry-max-times", "5", "--consume-enable", "false").stdout
    assert "retryMaxTimes 5" in out and "consumeEnable false" in out
    got = ccluster.admin("group", "get", "-g", group, "-b", ccluster.broker_addr).stdout
    assert '"retryMaxTimes": 5' in got and '"consumeEnable": false' in got
    ccluster.group_update(group, "--consume-enable")
    assert '"consumeEnable": true' in ccluster.admin("group", "get", "-g", group, "-b", ccluster.broker_addr).stdout

    producer = clients.producer(ccluster.namesrv_addr)
    send_all(producer, topic, [f"a-{i}".encode() for i in range(6)])
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    time.sleep(0.05)
    send_all(producer, topic, [f"b-{i}".encode() for i in range(6)])
    rec = Recorder()
    consumer = start_push_consumer(clients, ccluster.namesrv_addr, topic,
                                   lambda m: (rec.add("x", m), CONSUME_SUCCESS)[1], group)
    assert wait_for(lambda: len(rec.snapshot()) >= 12, DELIVERY_TIMEOUT_S)
    stop_consumer(clients, consumer)
    assert wait_for(lambda: online_clients(ccluster, group) == 0, 30)
    ccluster.admin("offset", "reset-by-time", "-g", group, "-t", topic, "--timestamp", str(middle))
    rows = progress_rows(ccluster, group, topic)
    assert sum(broker - consumer for _, broker, consumer in rows) == 6, rows
    rec2 = Recorder()
    consumer = start_push_consumer(clients, ccluster.namesrv_addr, topic,
                                   lambda m: (rec2.add("y", m), CONSUME_SUCCESS)[1], group)
    want = {f"b-{i}".encode() for i in range(6)}
    assert wait_for(lambda: want <= set(rec2.bodies()), DELIVERY_TIMEOUT_S)
    wait_for(lambda: False, 1)
    assert set(rec2.bodies()) == want, "consumption restarted at the reset time"
    assert wait_for(lambda: online_clients(ccluster, group) == 1, 30)
    conn = ccluster.admin("consumer", "connection", "-g", group, "-b", ccluster.broker_addr).stdout
    assert "CPP" in conn and topic in conn and "CLUSTERING" in conn, conn

    stop_consumer(clients, consumer)  # its heartbeats would create the group again
    ccluster.admin("group", "delete", "-g", group, "-b", ccluster.broker_addr)
    gone = ccluster.admin("group", "get", "-g", group, "-b", ccluster.broker_addr, check=False)
    assert gone.returncode != 0 and "no subscription group" in gone.stdout + gone.stderr, gone
