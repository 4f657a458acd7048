"""Online offset reset (mqadmin resetOffsetByTime) with the Apache C++
client (PyPI rocketmq==0.4.4): `ferrocket admin offset reset-by-time` asks
the broker (INVOKE_BROKER_TO_RESET_OFFSET), which commits the new offsets
and pushes RESET_CONSUMER_CLIENT_OFFSET to the group's running consumers;
a running push consumer then receives the messages again. For a group
with no consumer online the command rewrites the committed offsets itself."""

import time
from collections import Counter

from rocketmq.client import SendStatus

from consumption_helpers import CONSUME_SUCCESS, Recorder, start_push_consumer, wait_for
from interop_helpers import make_message
from naming import unique_name

DELIVERY_TIMEOUT_S = 60
MESSAGES = 8


def new_topic(cluster, queues):
    name = unique_name("ResetTopic")
    cluster.admin("topic", "create", "--topic", name, "--broker-addr", cluster.broker_addr,
                  "-r", str(queues), "-w", str(queues))
    assert wait_for(lambda: cluster.admin("topic", "route", "--topic", name, check=False).returncode == 0, 30)
    return name


def send_all(producer, topic, bodies):
    for body in bodies:
        result = producer.send_sync(make_message(topic, body))
        assert result.status == SendStatus.OK, result


def progress_rows(cluster, group, topic):
    """(queue id, broker offset, consumer offset) from `consumer progress`."""
    out = cluster.admin("consumer", "progress", "-g", group, "-t", topic, "-b", cluster.broker_addr).stdout
    rows = []
    for line in out.splitlines():
        cells = line.split()
        if cells and cells[0] == topic:
            rows.append((int(cells[2]), int(cells[3]), int(cells[4])))
    return sorted(rows)


def reset_rows(out, topic):
    """(queue id, new offset, mode) from `offset reset-by-time`."""
    rows = []
    for line in out.splitlines():
        cells = line.split()
        if cells and cells[0] == topic:
            rows.append((int(cells[2]), int(cells[4]), cells[5]))
    return sorted(rows)


def lag(cluster, group, topic):
    return sum(broker - consumer for _, broker, consumer in progress_rows(cluster, group, topic))


def test_online_reset_redelivers_to_a_running_push_consumer(cluster, clients):
    topic = new_topic(cluster, queues=2)
    group = unique_name("ResetG")
    producer = clients.producer(cluster.namesrv_addr)
    before = int(time.time() * 1000) - 1
    time.sleep(0.05)
    bodies = [f"m-{i}".encode() for i in range(MESSAGES)]
    send_all(producer, topic, bodies)

    rec = Recorder()
    start_push_consumer(clients, cluster.namesrv_addr, topic,
                        lambda m: (rec.add("c", m), CONSUME_SUCCESS)[1], group)
    assert wait_for(lambda: set(bodies) <= set(rec.bodies()), DELIVERY_TIMEOUT_S)
    # The consumer commits its progress every few seconds.
    assert wait_for(lambda: lag(cluster, group, topic) == 0, 30), progress_rows(cluster, group, topic)
    assert Counter(rec.bodies()) == Counter(bodies), "each message once before the reset"

    out = cluster.admin("offset", "reset-by-time", "-g", group, "-t", topic, "--timestamp", str(before)).stdout
    rows = reset_rows(out, topic)
    assert rows == [(0, 0, "online"), (1, 0, "online")], out

    assert wait_for(lambda: all(n >= 2 for n in Counter(rec.bodies()).values()), DELIVERY_TIMEOUT_S), \
        Counter(rec.bodies())
    assert wait_for(lambda: lag(cluster, group, topic) == 0, 30), progress_rows(cluster, group, topic)


def test_online_reset_back_to_a_middle_time(cluster, clients):
    topic = new_topic(cluster, queues=1)
    group = unique_name("ResetG")
    producer = clients.producer(cluster.namesrv_addr)
    send_all(producer, topic, [b"old"])
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    time.sleep(0.05)
    send_all(producer, topic, [b"new"])

    rec = Recorder()
    start_push_consumer(clients, cluster.namesrv_addr, topic,
                        lambda m: (rec.add("c", m), CONSUME_SUCCESS)[1], group)
    assert wait_for(lambda: {b"old", b"new"} <= set(rec.bodies()), DELIVERY_TIMEOUT_S)
    assert wait_for(lambda: lag(cluster, group, topic) == 0, 30)

    # Back to the middle: only "new" comes again.
    out = cluster.admin("offset", "reset-by-time", "-g", group, "-t", topic,
                        "--timestamp", str(middle), "--force", "false").stdout
    assert reset_rows(out, topic) == [(0, 1, "online")], out
    assert wait_for(lambda: Counter(rec.bodies())[b"new"] >= 2, DELIVERY_TIMEOUT_S), rec.bodies()
    wait_for(lambda: False, 1)
    assert Counter(rec.bodies())[b"old"] == 1, rec.bodies()


def test_offline_group_is_reset_directly(cluster, clients):
    topic = new_topic(cluster, queues=2)
    group = unique_name("ResetOffG")
    producer = clients.producer(cluster.namesrv_addr)
    send_all(producer, topic, [f"x-{i}".encode() for i in range(4)])
    later = str(int(time.time() * 1000) + 60_000)

    def reset(timestamp, *extra):
        out = cluster.admin("offset", "reset-by-time", "-g", group, "-t", topic, "--timestamp", timestamp,
                            *extra).stdout
        rows = reset_rows(out, topic)
        assert [mode for _, _, mode in rows] == ["offline", "offline"], out
        return sum(offset for _, offset, _ in rows)

    assert reset(later) == 4
    assert lag(cluster, group, topic) == 0, progress_rows(cluster, group, topic)
    assert reset("0") == 0
    # Without force, offsets only move back.
    assert reset(later, "--force", "false") == 0
    assert lag(cluster, group, topic) == 4
    assert reset(later, "--force") == 4
