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


def test_an_account_sends_and_receives_through_grpc(acl_v5):
    allowed, _ = acl_v5.topics
    started = []
    try:
        group = harness.unique_name("V5AclGroup")
        consumer = SimpleConsumer(
            config(acl_v5, "appAccess1", "appSecret1"), group, {allowed: FilterExpression("*")},
            await_duration=LONG_POLL_S,
        )
        consumer.startup()
        started.append(consumer)
        consumer.receive(16, INVISIBLE_MIN_S)
        producer = Producer(config(acl_v5, "appAccess1", "appSecret1"), (allowed,))
        producer.startup()
        started.append(producer)
        producer.send(message(allowed, "acl-v5"))
        deadline = time.monotonic() + RECEIVE_TIMEOUT_S
        bodies = []
        while "acl-v5" not in bodies and time.monotonic() < deadline:
            for received in consumer.receive(16, INVISIBLE_MIN_S) or []:
                bodies.append(received.body.decode())
                consumer.ack(received)
        assert "acl-v5" in bodies
    finally:
        for client in reversed(started):
            client.shutdown()


@pytest.mark.parametrize(
    "keys, topic_index, why",
    [
        (("appAccess1", "appSecret1"), 1, "No default permission for topic:"),
        (("appAccess1", "notTheSecret"), 0, "Check signature failed for accessKey=appAccess1"),
        ((None, None), 0, "No accessKey is configured"),
    ],
)
def test_grpc_calls_the_account_may_not_make_are_refused(acl_v5, keys, topic_index, why, caplog):
    topic = acl_v5.topics[topic_index]
    producer = Producer(config(acl_v5, *keys), (topic,))
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
