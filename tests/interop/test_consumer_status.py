"""`ferrocket admin consumer status` (mqadmin consumerStatus, issue 14):
the broker passes GET_CONSUMER_RUNNING_INFO to a C++ push consumer and
returns its answer; a client that is not online gets Java's answer."""

import time

from naming import unique_name
from remoting import RemotingConnection

ONLINE_TIMEOUT_S = 30
GET_CONSUMER_RUNNING_INFO = 307
SYSTEM_ERROR = 1


def running_info(cluster, group):
    """`consumer status` output once the consumer has answered."""
    deadline = time.monotonic() + ONLINE_TIMEOUT_S
    while True:
        out = cluster.admin("consumer", "status", "-g", group, "-b", cluster.broker_addr, check=False)
        if out.returncode == 0 and "PROP_CONSUME_TYPE" in out.stdout:
            return out.stdout
        assert time.monotonic() < deadline, f"no running info:\n{out.stdout}\n{out.stderr}"
        time.sleep(0.5)


def test_a_push_consumer_describes_itself_through_the_broker(cluster, clients, topic):
    group = unique_name("StatusCG")
    clients.push_consumer(cluster.namesrv_addr, topic, lambda msg: None, group=group)
    out = running_info(cluster, group)
    # The C++ client's own properties, as it sent them.
    assert "CONSUME_PASSIVELY" in out, out
    assert "PROP_CLIENT_VERSION" in out and "PROP_CONSUMER_START_TIMESTAMP" in out, out
    assert cluster.namesrv_addr in out, out
    assert f"subscribes {topic} *" in out, out

    conn = RemotingConnection(cluster.broker_addr)
    try:
        header, _ = conn.request(GET_CONSUMER_RUNNING_INFO, {"consumerGroup": group, "clientId": "10.0.0.9@nobody"})
    finally:
        conn.close()
    assert header["code"] == SYSTEM_ERROR, header
    assert header["remark"] == f"The Consumer {group} 10.0.0.9@nobody not online", header
