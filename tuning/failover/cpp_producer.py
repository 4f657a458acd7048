"""Sends one message every PERIOD_MS with the Apache RocketMQ C++ client
(PyPI rocketmq==0.4.4, every setting at its default) and prints the
wall-clock time (epoch ms) of each acknowledged send (SendStatus.OK) and of
its start on stdout ("ACK START"); a failed send prints "E <epoch ms> <reason>". Used by
tuning/failover.sh, with the tests/interop venv's python:

  cpp_producer.py NAMESRV TOPIC PERIOD_MS
"""

import os
import sys
import time

from rocketmq.client import Message, Producer, SendStatus


def main(namesrv, topic, period_ms):
    producer = Producer(f"failover-cpp-{os.getpid()}")
    producer.set_namesrv_addr(namesrv)
    producer.start()
    body = b"x" * 128
    while True:
        msg = Message(topic)
        msg.set_body(body)
        start = int(time.time() * 1000)
        try:
            status = producer.send_sync(msg).status
            now = int(time.time() * 1000)
            print(f"{now} {start}" if status == SendStatus.OK else f"E {now} {status}", flush=True)
        except Exception as error:  # noqa: BLE001 - every failure is a data point
            why = str(error).replace("\n", " ")[:200]
            print(f"E {int(time.time() * 1000)} {why}", flush=True)
        time.sleep(period_ms / 1000)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
