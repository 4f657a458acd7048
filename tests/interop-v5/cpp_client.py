"""Runs the Apache RocketMQ C++ client (PyPI rocketmq==0.4.4) for the v5
suite, which cannot import it (both packages are named `rocketmq`): run with
the tests/interop venv's python.

  cpp_client.py send NAMESRV TOPIC COUNT PREFIX      prints one line per message id
  cpp_client.py consume NAMESRV TOPIC GROUP COUNT TIMEOUT_S
                                                    prints the bodies it got, one a line
"""

import sys
import threading
import time

from rocketmq.client import Message, Producer, PushConsumer


def send(namesrv, topic, count, prefix):
    producer = Producer(f"v5-cross-{int(time.time() * 1000)}")
    producer.set_namesrv_addr(namesrv)
    producer.start()
    try:
        for i in range(count):
            msg = Message(topic)
            msg.set_body(f"{prefix}-{i}".encode())
            msg.set_tags("cpp")
            msg.set_keys(f"cpp-key-{i}")
            print(producer.send_sync(msg).msg_id, flush=True)
    finally:
        producer.shutdown()


def consume(namesrv, topic, group, count, timeout_s):
    got = []
    lock = threading.Lock()

    def on_message(msg):
        with lock:
            got.append(msg.body.decode())
        # Returning normally is CONSUME_SUCCESS in this binding.

    consumer = PushConsumer(group)
    consumer.set_namesrv_addr(namesrv)
    consumer.subscribe(topic, on_message, "*")
    consumer.start()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            with lock:
                if len(got) >= count:
                    break
            time.sleep(0.1)
    finally:
        consumer.shutdown()
    for body in got:
        print(body, flush=True)


if __name__ == "__main__":
    verb = sys.argv[1]
    if verb == "send":
        send(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif verb == "consume":
        consume(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]))
    else:
        sys.exit(f"unknown verb {verb}")
