"""A minimal Remoting client in pure Python (JSON headers), used to register
stand-in brokers with a name server so the C++ client's route lookup can be
checked without a broker process."""

import json
import socket
import struct

REGISTER_BROKER = 103
SUCCESS = 0
ANSWER_TIMEOUT_S = 10


class RemotingConnection:
    """One connection; over TLS with `ssl_context` (Python's ssl module)."""

    def __init__(self, addr, ssl_context=None):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=ANSWER_TIMEOUT_S)
        if ssl_context is not None:
            self.sock = ssl_context.wrap_socket(self.sock, server_hostname=host)
        self.next_opaque = 1

    def close(self):
        self.sock.close()

    def _read_exact(self, count):
        data = b""
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            if not chunk:
                raise ConnectionError("the server closed the connection")
            data += chunk
        return data

    def request(self, code, ext_fields, body=b""):
        """Sends one request; returns (response header dict, body)."""
        opaque = self.next_opaque
        self.next_opaque += 1
        header = json.dumps(
            {
                "code": code,
                "language": "JAVA",
                "version": 453,
                "opaque": opaque,
                "flag": 0,
                "extFields": {k: str(v) for k, v in ext_fields.items()},
                "serializeTypeCurrentRPC": "JSON",
            }
        ).encode()
        frame = struct.pack(">II", 4 + len(header) + len(body), len(header)) + header + body
        self.sock.sendall(frame)
        while True:
            (total,) = struct.unpack(">I", self._read_exact(4))
            data = self._read_exact(total)
            (marked,) = struct.unpack(">I", data[:4])
            header_len = marked & 0xFFFFFF
            response = json.loads(data[4 : 4 + header_len])
            if response.get("opaque") == opaque:
                return response, data[4 + header_len :]


def topic_config(name, queues):
    return {
        "topicName": name,
        "readQueueNums": queues,
        "writeQueueNums": queues,
        "perm": 6,
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": 0,
        "order": False,
    }


class StandInBroker:
    """Registers a broker identity with a name server over one connection
    and keeps that connection open (closing it unregisters the broker)."""

    def __init__(self, namesrv_addr, cluster, name, addr, topics):
        self.conn = RemotingConnection(namesrv_addr)
        # Like a Java broker, it also registers topics named after itself
        # and its cluster.
        table = {t: topic_config(t, q) for t, q in {**topics, name: 1, cluster: 1}.items()}
        body = json.dumps(
            {
                "topicConfigSerializeWrapper": {
                    "topicConfigTable": table,
                    "dataVersion": {"stateVersion": 0, "timestamp": 1, "counter": 1},
                },
                "filterServerList": [],
            }
        ).encode()
        response, _ = self.conn.request(
            REGISTER_BROKER,
            {
                "brokerName": name,
                "brokerAddr": addr,
                "clusterName": cluster,
                "haServerAddr": "",
                "brokerId": 0,
                "compressed": "false",
                "bodyCrc32": 0,
            },
            body,
        )
        if response.get("code") != SUCCESS:
            self.conn.close()
            raise RuntimeError(f"REGISTER_BROKER failed: {response}")

    def close(self):
        self.conn.close()
