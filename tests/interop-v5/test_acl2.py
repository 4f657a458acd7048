"""ACL 2.0 for the official Python v5 client: the broker's gRPC endpoint
(`enableProxy=true`) checks the client's `authorization` against the
broker's users (made with `ferrocket admin user create`) and their ACLs,
fetched from the broker with its `innerClientAuthenticationCredentials`
(a super user). A user sends and receives what its ACL allows; a topic it
lacks, a wrong password and no credentials are refused (40100)."""

import json
import time

import pytest

from conftest import harness
from test_acl import refused_producer, sends_and_receives

ROOT = ("--access-key", "proxyUser", "--secret-key", "proxySecret1")
# The endpoint fetches the broker's users and ACLs every 5 s.
USERS_REFRESH_S = 6


@pytest.fixture(scope="module")
def acl2_v5():
    allowed, other = harness.unique_name("V5Acl2"), harness.unique_name("V5Acl2Other")
    group = harness.unique_name("V5Acl2Group")
    inner = json.dumps({"accessKey": "proxyUser", "secretKey": "proxySecret1"})
    cluster = harness.Cluster(
        "v5-acl2",
        auto_create_topic=False,
        broker_args=(
            "--shards", "1",
            "--set", "enableProxy=true",
            "--set", "authenticationEnabled=true",
            "--set", "authorizationEnabled=true",
            "--set", f"innerClientAuthenticationCredentials={inner}",
        ),
    )
    try:
        b = ("-b", cluster.broker_addr)
        for topic in (allowed, other):
            cluster.admin(*ROOT, "topic", "create", "-t", topic, *b)
        cluster.admin(*ROOT, "user", "create", *b, "-u", "app", "-p", "appSecret1")
        cluster.admin(*ROOT, "acl", "create", *b, "-s", "User:app", "-r", f"Topic:{allowed}",
                      "-a", "Pub,Sub", "-d", "Allow")
        cluster.admin(*ROOT, "acl", "create", *b, "-s", "User:app", "-r", f"Group:{group}",
                      "-a", "Sub", "-d", "Allow")
        time.sleep(USERS_REFRESH_S)
        cluster.topics, cluster.group = (allowed, other), group
        yield cluster
    finally:
        cluster.stop()


def test_a_user_sends_and_receives_through_grpc(acl2_v5):
    allowed, _ = acl2_v5.topics
    sends_and_receives(acl2_v5, ("app", "appSecret1"), allowed, acl2_v5.group, "acl2-v5")


@pytest.mark.parametrize(
    "keys, topic_index, why",
    [
        (("app", "appSecret1"), 1, "User:app has no permission to access Topic:"),
        (("app", "notTheSecret"), 0, "check signature failed."),
        ((None, None), 0, "username cannot be null."),
    ],
)
def test_grpc_calls_the_user_may_not_make_are_refused(acl2_v5, keys, topic_index, why, caplog):
    refused_producer(acl2_v5, keys, acl2_v5.topics[topic_index], why, caplog)
