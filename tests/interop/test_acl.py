"""ACL 1.0 with the Apache RocketMQ C++ client (PyPI rocketmq==0.4.4): a
broker with `aclEnable=true` reads `{rocketmqHome}/conf/plain_acl.yml`;
a client with `set_session_credentials` sends and consumes what its account
allows and is refused the rest; unsigned and badly signed requests and
admin-only requests from a normal account are refused, with Java's words."""

import time

import pytest

from conftest import Cluster, interop_home
from interop_helpers import make_message
from naming import unique_name

PLAIN_ACL = """\
globalWhiteRemoteAddresses:
accounts:
  - accessKey: appAccess1
    secretKey: appSecret1
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - {allowed}=PUB|SUB
      - {read_only}=SUB
  - accessKey: adminAccess1
    secretKey: adminSecret1
    admin: true
"""
ADMIN = ("--access-key", "adminAccess1", "--secret-key", "adminSecret1")
APP = ("appAccess1", "appSecret1")
DELIVERY_TIMEOUT_S = 60
SEND_TIMEOUT_MS = 3000


@pytest.fixture
def acl_cluster():
    allowed, read_only, other = (unique_name(n) for n in ("AclTopic", "AclRead", "AclOther"))
    home = interop_home() / "acl" / unique_name("home")
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL.format(allowed=allowed, read_only=read_only))
    c = Cluster(
        "acl",
        auto_create_topic=False,
        broker_args=("--set", "aclEnable=true", "--set", f"rocketmqHome={home}"),
    )
    try:
        for topic in (allowed, read_only, other):
            c.admin(*ADMIN, "topic", "create", "-t", topic, "-b", c.broker_addr, "-r", "2", "-w", "2")
        c.topics = (allowed, read_only, other)
        yield c
    finally:
        c.stop()


def producer_with(clients, cluster, credentials):
    from rocketmq.client import Producer

    producer = Producer(unique_name("AclPG"), timeout=SEND_TIMEOUT_MS)
    producer.set_namesrv_addr(cluster.namesrv_addr)
    if credentials is not None:
        producer.set_session_credentials(*credentials, "")
    producer.start()
    clients._started.append(producer)
    return producer


# The broker logs at most ten refusals a second per shard: each case below
# starts a fresh second, so its line is not the one left out.
RATE_WINDOW_S = 1.1


def refused_in_log(cluster, needle):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if needle in cluster.broker.log_text():
            return True
        time.sleep(0.1)
    return False


def sends_and_consumes(clients, cluster, credentials, topic, group, prefix):
    """Five messages sent to `topic` and consumed by `group`, both signed
    with `credentials` (the C++ client's `set_session_credentials`)."""
    from rocketmq.client import PushConsumer

    producer = producer_with(clients, cluster, credentials)
    sent = {producer.send_sync(make_message(topic, f"{prefix}-{i}")).msg_id for i in range(5)}
    assert len(sent) == 5
    received = []
    consumer = PushConsumer(group)
    consumer.set_namesrv_addr(cluster.namesrv_addr)
    consumer.set_session_credentials(*credentials, "")
    consumer.subscribe(topic, lambda msg: received.append(msg.body.decode()))
    consumer.start()
    clients._started.append(consumer)
    deadline = time.monotonic() + DELIVERY_TIMEOUT_S
    while len(set(received)) < 5 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert set(received) == {f"{prefix}-{i}" for i in range(5)}


def test_an_account_sends_and_consumes_what_it_may(acl_cluster, clients):
    allowed, _, _ = acl_cluster.topics
    sends_and_consumes(clients, acl_cluster, APP, allowed, unique_name("AclCG"), "acl")


def test_topics_the_account_lacks_and_bad_credentials_are_refused(acl_cluster, clients):
    allowed, read_only, other = acl_cluster.topics
    producer = producer_with(clients, acl_cluster, APP)
    for topic, why in (
        (other, f"No default permission for topic:{other}"),
        (read_only, f"No permission for topic:{read_only}"),
    ):
        time.sleep(RATE_WINDOW_S)
        with pytest.raises(Exception):
            producer.send_sync(make_message(topic, "refused"))
        assert refused_in_log(
            acl_cluster, f"SYSTEM_ERROR (1): org.apache.rocketmq.acl.common.AclException: {why}"
        ), acl_cluster.broker.log_tail()

    wrong = producer_with(clients, acl_cluster, ("appAccess1", "notTheSecret"))
    time.sleep(RATE_WINDOW_S)
    with pytest.raises(Exception):
        wrong.send_sync(make_message(allowed, "refused"))
    assert refused_in_log(acl_cluster, "Check signature failed for accessKey=appAccess1")

    stranger = producer_with(clients, acl_cluster, ("strangerKey1", "whatever1"))
    time.sleep(RATE_WINDOW_S)
    with pytest.raises(Exception):
        stranger.send_sync(make_message(allowed, "refused"))
    assert refused_in_log(acl_cluster, "No acl config for strangerKey1")


def test_admin_requests_need_an_admin_account(acl_cluster):
    _, _, other = acl_cluster.topics
    create = ("topic", "create", "-t", unique_name("AclNew"), "-b", acl_cluster.broker_addr)
    normal = acl_cluster.admin("--access-key", APP[0], "--secret-key", APP[1], *create, check=False)
    assert normal.returncode != 0
    assert "Need admin permission for request code=17, but accessKey=appAccess1 is not" in normal.stderr
    unsigned = acl_cluster.admin(*create, check=False)
    assert unsigned.returncode != 0 and "No accessKey is configured" in unsigned.stderr, unsigned
    assert acl_cluster.admin(*ADMIN, *create).returncode == 0
