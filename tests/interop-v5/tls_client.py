"""Run by test_tls.py in its own process (gRPC reads
GRPC_DEFAULT_SSL_ROOTS_FILE_PATH, the CA it trusts, once per process):
the official v5 client with tls_enable=True sends MESSAGES to a topic and a
simple consumer over TLS receives and acks them.

usage: tls_client.py ENDPOINT TOPIC GROUP; prints "received N"."""

import sys
import time

from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer

MESSAGES = 5
DEADLINE_S = 60
INVISIBLE_S = 10


def main():
    endpoint, topic, group = sys.argv[1:4]
    config = ClientConfiguration(endpoint, Credentials())
    consumer = SimpleConsumer(config, group, {topic: FilterExpression("*")}, await_duration=5, tls_enable=True)
    consumer.startup()
    # A new group starts at the queues' ends once it has popped.
    consumer.receive(16, INVISIBLE_S)
    producer = Producer(config, (topic,), tls_enable=True)
    producer.startup()
    for n in range(MESSAGES):
        msg = Message()
        msg.topic = topic
        msg.body = f"tls-{n}".encode()
        producer.send(msg)
    seen = set()
    deadline = time.monotonic() + DEADLINE_S
    while len(seen) < MESSAGES and time.monotonic() < deadline:
        for message in consumer.receive(16, INVISIBLE_S) or []:
            consumer.ack(message)
            seen.add(message.body.decode())
    producer.shutdown()
    consumer.shutdown()
    print(f"received {len(seen)}", flush=True)


if __name__ == "__main__":
    main()
