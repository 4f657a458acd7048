"""TLS on the broker's port (`tls.server.mode`, issue 14): the Apache C++
client (which has no TLS) and a TLS client (Python's ssl module, verifying
a CA-signed certificate) on one permissive port; an enforcing port closes
plaintext clients unanswered and serves TLS ones, `ferrocket admin --tls`
included."""

import ssl

from rocketmq.client import SendStatus

from conftest import Cluster
from interop_helpers import make_message
from naming import unique_name
from remoting import SUCCESS, RemotingConnection
from tls_certs import make_pki

GET_MAX_OFFSET = 30
GET_BROKER_RUNTIME_INFO = 28
QUEUES_LOOKED_AT = 16
MESSAGES = 10


def tls_connection(addr, ca):
    """A Remoting connection over TLS that verifies the broker's certificate
    (chain to `ca`, and 127.0.0.1 in it)."""
    return RemotingConnection(addr, ssl_context=ssl.create_default_context(cafile=str(ca)))


def stored(conn, topic):
    """Messages in `topic`, from each queue's max offset."""
    total = 0
    for queue in range(QUEUES_LOOKED_AT):
        header, _ = conn.request(GET_MAX_OFFSET, {"topic": topic, "queueId": queue})
        assert header["code"] == SUCCESS, header
        total += int(header["extFields"]["offset"])
    return total


def test_a_permissive_port_serves_plaintext_and_tls_clients(tmp_path, clients):
    pki = make_pki(tmp_path / "pki")
    cluster = Cluster("tls-permissive", broker_args=pki.server_settings("permissive"))
    try:
        topic = cluster.create_topic(unique_name("TlsTopic"))
        producer = clients.producer(cluster.namesrv_addr)
        for i in range(MESSAGES):
            result = producer.send_sync(make_message(topic, f"plain-{i}"))
            assert result.status == SendStatus.OK, result
        conn = tls_connection(cluster.broker_addr, pki.ca)
        try:
            assert conn.sock.version() in ("TLSv1.2", "TLSv1.3"), conn.sock.version()
            assert stored(conn, topic) == MESSAGES
        finally:
            conn.close()
    finally:
        cluster.stop()


def test_an_enforcing_port_closes_plaintext_and_serves_tls(tmp_path):
    pki = make_pki(tmp_path / "pki")
    cluster = Cluster("tls-enforcing", broker_args=pki.server_settings("enforcing"))
    try:
        plain = RemotingConnection(cluster.broker_addr)
        try:
            try:
                answer = plain.request(GET_BROKER_RUNTIME_INFO, {})
            except OSError as closed:  # ConnectionError, or a reset
                answer = closed
            assert isinstance(answer, OSError), f"a plaintext client was answered: {answer}"
        finally:
            plain.close()
        conn = tls_connection(cluster.broker_addr, pki.ca)
        try:
            header, _ = conn.request(GET_BROKER_RUNTIME_INFO, {})
            assert header["code"] == SUCCESS, header
        finally:
            conn.close()
        # The admin tool reaches it only over TLS (the name server here is
        # permissive, with test mode's certificate).
        topic = unique_name("TlsAdminTopic")
        create = ("topic", "create", "--topic", topic, "--broker-addr", cluster.broker_addr)
        assert cluster.admin(*create, check=False).returncode != 0
        cluster.admin("--tls", *create)
        conn = tls_connection(cluster.broker_addr, pki.ca)
        try:
            assert stored(conn, topic) == 0
        finally:
            conn.close()
    finally:
        cluster.stop()
