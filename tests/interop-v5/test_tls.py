"""The official Python v5 client over TLS (issue 14): to `ferrocket proxy`
with `tls.server.mode=enforcing` (a plaintext HTTP/2 client is closed
unanswered), and to a broker's own port with the in-broker endpoint
(`enableProxy=true`), where a permissive port tells gRPC over TLS (ALPN h2)
from Remoting. The client verifies a CA-signed certificate."""

import os
import socket
import subprocess
import sys

from conftest import HERE, harness
from tls_certs import make_pki

HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
CLIENT_TIMEOUT_S = 150


def tls_client(endpoint, topic, ca):
    """Sends and receives over TLS in a process of its own; its output."""
    result = subprocess.run(
        [sys.executable, str(HERE / "tls_client.py"), endpoint, topic, harness.unique_name("TlsGroup")],
        env={**os.environ, "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(ca)},
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result.stdout


def test_an_enforcing_proxy_serves_tls_clients_only(tmp_path):
    pki = make_pki(tmp_path / "pki")
    remoting = harness.Cluster("v5-tls", auto_create_topic=False)
    proxy = None
    try:
        proxy = harness.start_server(
            "proxy",
            lambda port: ["proxy", "--namesrv-addr", remoting.namesrv_addr, "--listen-addr", "127.0.0.1",
                          "--listen-port", str(port), *pki.server_settings("enforcing")],
            remoting.workdir / "proxy",
        )
        topic = remoting.create_topic(harness.unique_name("V5TlsTopic"))
        assert "received 5" in tls_client(proxy.addr, topic, pki.ca)
        host, port = proxy.addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as plain:
            plain.sendall(HTTP2_PREFACE)
            try:
                answer = plain.recv(1024)
            except ConnectionResetError:
                answer = b""
            assert answer == b"", f"a plaintext client was answered: {answer!r}"
    finally:
        if proxy:
            proxy.stop()
        remoting.stop()


def test_the_brokers_port_serves_grpc_over_tls(tmp_path):
    pki = make_pki(tmp_path / "pki")
    broker_args = ("--set", "enableProxy=true", *pki.server_settings("permissive"))
    cluster = harness.Cluster("v5-tls-local", auto_create_topic=False, broker_args=broker_args)
    try:
        topic = cluster.create_topic(harness.unique_name("V5TlsLocalTopic"))
        assert "received 5" in tls_client(cluster.broker_addr, topic, pki.ca)
    finally:
        cluster.stop()
