"""ACL 1.0 for the official Python v5 client: the broker's gRPC endpoint
(`enableProxy=true`) checks the client's `authorization` against the same
`plain_acl.yml` accounts as Remoting clients, and signs its own calls to
the broker with `innerClientAuthenticationCredentials`. An account sends
and receives what it may; a topic it lacks, a wrong secret and no
credentials are refused."""

import json
import time

import pytest
from rocketmq import ClientConfiguration, Credentials, FilterExpression, Producer, SimpleConsumer

from conftest import harness
from test_grpc import INVISIBLE_MIN_S, LONG_POLL_S, message

PLAIN_ACL = """\
accounts:
  - accessKey: appAccess1
    secretKey: appSecret1
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - {allowed}=PUB|SUB
  - accessKey: proxyAccess1
    secretKey: proxySecret1
    admin: true
"""
ADMIN = ("--access-key", "proxyAccess1", "--secret-key", "proxySecret1")
RECEIVE_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def acl_v5():
    allowed, other = harness.unique_name("V5Acl"), harness.unique_name("V5AclOther")
    home = harness.interop_home() / "v5-acl" / harness.unique_name("home")
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL.format(allowed=allowed))
    inner = json.dumps({"accessKey": "proxyAccess1", "secretKey": "proxySecret1"})
    cluster = harness.Cluster(
        "v5-acl",
        auto_create_topic=False,
        broker_args=(
            "--shards", "1",
            "--set", "enableProxy=true",
            "--set", "aclEnable=true",
            "--set", f"rocketmqHome={home}",
            "--set", f"innerClientAuthenticationCredentials={inner}",
        ),
    )
    try:
        for topic in (allowed, other):
            cluster.admin(*ADMIN, "topic", "create", "-t", topic, "-b", cluster.broker_addr)
        cluster.topics = (allowed, other)
        yield cluster
    finally:
        cluster.stop()


def config(cluster, access_key=None, secret_key=None):
    credentials = Credentials(access_key, secret_key) if access_key else Credentials()
    return ClientConfiguration(cluster.broker_addr, credentials)


def sends_and_receives(cluster, keys, topic, group, body):
    """A SimpleConsumer and a Producer signed with `keys` (`Credentials`):
    `body` sent to `topic` is received and acked by `group`."""
    started = []
    try:
        consumer = SimpleConsumer(
            config(cluster, *keys), group, {topic: FilterExpression("*")},
            await_duration=LONG_POLL_S,
        )
        consumer.startup()
        started.append(consumer)
        consumer.receive(16, INVISIBLE_MIN_S)
        producer = Producer(config(cluster, *keys), (topic,))
        producer.startup()
        started.append(producer)
        producer.send(message(topic, body))
        deadline = time.monotonic() + RECEIVE_TIMEOUT_S
        bodies = []
        while body not in bodies and time.monotonic() < deadline:
            for received in consumer.receive(16, INVISIBLE_MIN_S) or []:
                bodies.append(received.body.decode())
                consumer.ack(received)
        assert body in bodies
    finally:
        for client in reversed(started):
            client.shutdown()


def refused_producer(cluster, keys, topic, why, caplog):
    """A Producer signed with `keys` is refused for `topic`, with `why`."""
    producer = Producer(config(cluster, *keys), (topic,))
    try:
        with pytest.raises(Exception) as refused:
            producer.startup()
            producer.send(message(topic, "refused"))
        # The client reports its route query's gRPC error in its log and
        # raises a summary: the endpoint's words are in the former.
        said = caplog.text + str(refused.value)
        assert why in said and "(40100)" in said, said
    finally:
        try:
            producer.shutdown()
        except Exception:
            pass


def test_an_account_sends_and_receives_through_grpc(acl_v5):
    allowed, _ = acl_v5.topics
    keys = ("appAccess1", "appSecret1")
    sends_and_receives(acl_v5, keys, allowed, harness.unique_name("V5AclGroup"), "acl-v5")


@pytest.mark.parametrize(
    "keys, topic_index, why",
    [
        (("appAccess1", "appSecret1"), 1, "No default permission for topic:"),
        (("appAccess1", "notTheSecret"), 0, "Check signature failed for accessKey=appAccess1"),
        ((None, None), 0, "No accessKey is configured"),
    ],
)
def test_grpc_calls_the_account_may_not_make_are_refused(acl_v5, keys, topic_index, why, caplog):
    refused_producer(acl_v5, keys, acl_v5.topics[topic_index], why, caplog)
