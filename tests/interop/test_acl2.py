"""ACL 2.0 with the Apache RocketMQ C++ client (PyPI rocketmq==0.4.4): a
broker with `authenticationEnabled=true` and `authorizationEnabled=true`;
users and ACLs made with `ferrocket admin user|acl`; a client with
`set_session_credentials(username, password, "")` sends and consumes what
its ACL allows and is refused the rest with NO_PERMISSION, as Java's broker
answers; unsigned clients and wrong passwords are refused."""

import json
import time

import pytest

from conftest import Cluster
from interop_helpers import make_message
from naming import unique_name
from test_acl import RATE_WINDOW_S, producer_with, refused_in_log, sends_and_consumes

ROOT = ("root", "rootSecret1")
APP = ("app", "appSecret1")
AS_ROOT = ("--access-key", ROOT[0], "--secret-key", ROOT[1])


@pytest.fixture
def auth_cluster():
    allowed, other, group = unique_name("Acl2Topic"), unique_name("Acl2Other"), unique_name("Acl2CG")
    init = json.dumps({"username": ROOT[0], "password": ROOT[1]})
    c = Cluster(
        "acl2",
        auto_create_topic=False,
        broker_args=(
            "--set", "authenticationEnabled=true",
            "--set", "authorizationEnabled=true",
            "--set", f"initAuthenticationUser={init}",
        ),
    )
    try:
        b = ("-b", c.broker_addr)
        for topic in (allowed, other):
            c.admin(*AS_ROOT, "topic", "create", "-t", topic, *b, "-r", "2", "-w", "2")
        c.admin(*AS_ROOT, "user", "create", *b, "-u", APP[0], "-p", APP[1], "-t", "Normal")
        # A consumer starting without an offset asks the topic's max
        # offset, which needs Get (as on Java's broker).
        c.admin(*AS_ROOT, "acl", "create", *b, "-s", "User:app", "-r", f"Topic:{allowed}",
                "-a", "Pub,Sub,Get", "-d", "Allow")
        c.admin(*AS_ROOT, "acl", "create", *b, "-s", "User:app", "-r", f"Group:{group}",
                "-a", "Sub", "-d", "Allow")
        c.topics, c.group = (allowed, other), group
        yield c
    finally:
        c.stop()


def test_a_user_sends_and_consumes_what_its_acl_allows(auth_cluster, clients):
    allowed, _ = auth_cluster.topics
    sends_and_consumes(clients, auth_cluster, APP, allowed, auth_cluster.group, "acl2")


def test_what_the_acl_lacks_and_bad_credentials_are_refused(auth_cluster, clients):
    allowed, other = auth_cluster.topics
    producer = producer_with(clients, auth_cluster, APP)
    time.sleep(RATE_WINDOW_S)
    with pytest.raises(Exception):
        producer.send_sync(make_message(other, "refused"))
    assert refused_in_log(
        auth_cluster,
        f"NO_PERMISSION (16): User:app has no permission to access Topic:{other} from 127.0.0.1, "
        "no matched policies.",
    ), auth_cluster.broker.log_tail()

    for credentials, why in (
        (("app", "notThePassword"), "check signature failed."),
        (("stranger", "whatever1"), "User:stranger is not found."),
    ):
        wrong = producer_with(clients, auth_cluster, credentials)
        time.sleep(RATE_WINDOW_S)
        with pytest.raises(Exception):
            wrong.send_sync(make_message(allowed, "refused"))
        assert refused_in_log(auth_cluster, why), auth_cluster.broker.log_tail()


def test_users_and_acls_are_managed_by_super_users_only(auth_cluster):
    b = ("-b", auth_cluster.broker_addr)
    as_app = ("--access-key", APP[0], "--secret-key", APP[1])
    denied = auth_cluster.admin(*as_app, "user", "create", *b, "-u", "eve", "-p", "evePassword1", check=False)
    assert denied.returncode != 0
    assert "User:app has no permission to access Cluster:" in denied.stderr, denied.stderr
    listed = auth_cluster.admin(*AS_ROOT, "user", "list", *b).stdout
    assert "app" in listed and "Normal" in listed, listed
    acl = auth_cluster.admin(*AS_ROOT, "acl", "list", *b, "-s", "User:app").stdout
    allowed, _ = auth_cluster.topics
    assert f"Topic:{allowed}" in acl and "Pub,Sub,Get" in acl, acl
    auth_cluster.admin(*AS_ROOT, "acl", "delete", *b, "-s", "User:app", "-r", f"Topic:{allowed}")
    acl = auth_cluster.admin(*AS_ROOT, "acl", "get", *b, "-s", "User:app").stdout
    assert f"Topic:{allowed}" not in acl and f"Group:{auth_cluster.group}" in acl, acl
