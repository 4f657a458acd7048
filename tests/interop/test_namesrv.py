"""NameServer interop (issue 2): the Apache C++ client looks routes up in our
name server."""

import time

import pytest
from rocketmq.client import SendStatus
from rocketmq.exceptions import ProducerSendSyncFailed, RocketMQException

from naming import unique_name
from remoting import StandInBroker
from interop_helpers import fetch_queues, make_message

# A failed route lookup must fail the send promptly, not after retries or
# timeouts pile up.
NO_ROUTE_FAIL_S_MAX = 20


def test_producer_finds_the_broker_through_our_namesrv(cluster, clients, topic):
    # The producer knows only the name server; the send can only succeed if
    # the route it got names our broker.
    producer = clients.producer(cluster.namesrv_addr)
    result = producer.send_sync(make_message(topic, "routed through ferrocket namesrv"))
    assert result.status == SendStatus.OK
    assert result.msg_id


def test_consumer_route_lookup_lists_the_registered_queues(cluster, clients, topic):
    consumer = clients.pull_consumer(cluster.namesrv_addr)
    queues = fetch_queues(consumer, topic)
    assert queues, "the C++ client found no queues for a topic our broker registered"
    assert {q.topic for q in queues} == {topic}
    assert len({q.broker_name for q in queues}) == 1
    ids = sorted(q.queue_id for q in queues)
    assert ids == list(range(len(ids))), f"queue ids are not 0..n-1: {ids}"


def _assert_send_fails_fast(producer, topic):
    started = time.monotonic()
    with pytest.raises(RocketMQException) as failure:
        producer.send_sync(make_message(topic, "nobody routes this"))
    elapsed = time.monotonic() - started
    assert elapsed < NO_ROUTE_FAIL_S_MAX, f"failing took {elapsed:.1f} s"
    return failure.value


def test_unknown_topic_fails_with_a_no_route_error_when_no_broker_exists(lone_namesrv, clients):
    producer = clients.producer(lone_namesrv.namesrv_addr)
    topic = unique_name("NoSuchTopic")
    error = _assert_send_fails_fast(producer, topic)
    # The C++ client asks for the topic, then for the default topic TBW102;
    # both answer TOPIC_NOT_EXIST, so it reports that it has no route.
    assert isinstance(error, ProducerSendSyncFailed), repr(error)
    assert "No route info" in str(error), str(error)
    assert topic in str(error), str(error)


def test_unknown_topic_fails_when_auto_create_is_off(cluster, clients):
    producer = clients.producer(cluster.namesrv_addr)
    topic = unique_name("NoSuchTopic")
    error = _assert_send_fails_fast(producer, topic)
    assert isinstance(error, ProducerSendSyncFailed), repr(error)
    # With autoCreateTopicEnable=false the broker registers no TBW102, so
    # there is no default route either.
    assert "No route info" in str(error), str(error)

    # The same producer still works for a topic that exists.
    existing = cluster.create_topic(unique_name("Topic"))
    assert producer.send_sync(make_message(existing, "still fine")).status == SendStatus.OK


def test_route_from_two_brokers_is_read_by_the_cpp_client(lone_namesrv, clients):
    # Two stand-in brokers (no processes behind them) register one topic
    # with different queue counts; the C++ client's route lookup must see
    # exactly those queues. It needs only the name server for this.
    topic = unique_name("TwoBrokerTopic")
    cluster_name = unique_name("Cluster")
    brokers = {unique_name("brokerA"): 3, unique_name("brokerB"): 5}
    stand_ins = [
        StandInBroker(lone_namesrv.namesrv_addr, cluster_name, name, f"127.0.0.1:{port}", {topic: queues})
        for (name, queues), port in zip(brokers.items(), (1, 2))
    ]
    try:
        consumer = clients.pull_consumer(lone_namesrv.namesrv_addr)
        queues = fetch_queues(consumer, topic)
        seen = {}
        for queue in queues:
            assert queue.topic == topic
            seen.setdefault(queue.broker_name, []).append(queue.queue_id)
        assert {name: sorted(ids) for name, ids in seen.items()} == {
            name: list(range(count)) for name, count in brokers.items()
        }
    finally:
        for stand_in in stand_ins:
            stand_in.close()
