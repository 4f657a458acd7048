"""Helpers over the C++ client's C API for the interop tests.

The Python binding's `PullConsumer.pull` loops forever on some pull statuses
and frees each result before the caller can look at it twice, so pulling is
done here directly through the same C functions, with bounded loops and the
pull status kept for error messages.
"""

import ctypes
import time
from dataclasses import dataclass, field

from rocketmq.client import Message, RecvMessage
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import _CMessageQueue, _CPullStatus, dll

PULL_BATCH_MAX = 32
# A queue that keeps answering something other than FOUND/NO_NEW_MSG this
# many times in one round is reported, not retried forever.
PULL_ROUNDS_PER_QUEUE_MAX = 1000


@dataclass(frozen=True)
class Received:
    """What a consumer saw of one message, copied out of the C++ object."""

    id: str
    topic: str
    tags: bytes
    keys: bytes
    body: bytes
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    store_size: int
    born_timestamp: int
    store_timestamp: int
    properties: dict = field(default_factory=dict, compare=False)


def snapshot(msg: RecvMessage, property_names=()):
    return Received(
        id=msg.id,
        topic=msg.topic,
        tags=msg.tags or b"",
        keys=msg.keys or b"",
        body=msg.body or b"",
        queue_id=msg.queue_id,
        queue_offset=msg.queue_offset,
        commit_log_offset=msg.commit_log_offset,
        store_size=msg.store_size,
        born_timestamp=msg.born_timestamp,
        store_timestamp=msg.store_timestamp,
        properties={name: msg.get_property(name) for name in property_names},
    )


def make_message(topic, body, keys=None, tags=None, properties=None):
    msg = Message(topic)
    msg.set_body(body)
    if keys is not None:
        msg.set_keys(keys)
    if tags is not None:
        msg.set_tags(tags)
    for name, value in (properties or {}).items():
        msg.set_property(name, value)
    return msg


@dataclass(frozen=True)
class Queue:
    topic: str
    broker_name: str
    queue_id: int

    def as_c(self):
        mq = _CMessageQueue()
        mq.topic = self.topic.encode()
        mq.brokerName = self.broker_name.encode()
        mq.queueId = self.queue_id
        return mq


def fetch_queues(consumer, topic):
    """The topic's message queues, as the C++ client's route lookup sees them."""
    array = ctypes.POINTER(_CMessageQueue)()
    size = ctypes.c_int()
    ffi_check(dll.FetchSubscriptionMessageQueues(consumer._handle, topic.encode(), ctypes.byref(array), ctypes.byref(size)))
    try:
        return [
            Queue(array[i].topic.decode(), array[i].brokerName.decode(), array[i].queueId)
            for i in range(size.value)
        ]
    finally:
        ffi_check(dll.ReleaseSubscriptionMessageQueue(array))


def pull_once(consumer, queue, offset, expression="*", max_num=PULL_BATCH_MAX, property_names=()):
    """One PULL_MESSAGE: (status name, next offset, [Received])."""
    mq = queue.as_c()
    result = dll.Pull(consumer._handle, ctypes.byref(mq), expression.encode(), offset, max_num)
    try:
        status = _CPullStatus(result.pullStatus).name
        found = []
        if result.pullStatus == _CPullStatus.FOUND:
            found = [snapshot(RecvMessage(result.msgFoundList[i]), property_names) for i in range(result.size)]
        return status, result.nextBeginOffset, found
    finally:
        dll.ReleasePullResult(result)


class Puller:
    """Pulls a topic from every queue, remembering where each queue is."""

    def __init__(self, consumer, topic, expression="*", property_names=()):
        self.consumer = consumer
        self.topic = topic
        self.expression = expression
        self.property_names = property_names
        self.offsets = {}
        self.statuses = []

    def drain_once(self):
        """Pulls every queue until it reports no new message; returns what came."""
        got = []
        for queue in fetch_queues(self.consumer, self.topic):
            offset = self.offsets.get(queue, 0)
            for _ in range(PULL_ROUNDS_PER_QUEUE_MAX):
                status, next_offset, found = pull_once(
                    self.consumer, queue, offset, self.expression, property_names=self.property_names
                )
                self.statuses.append((queue.queue_id, offset, status, next_offset))
                got.extend(found)
                if status == "BROKER_TIMEOUT":
                    break
                if status in ("NO_NEW_MSG", "OFFSET_ILLEGAL") and next_offset == offset:
                    break
                if next_offset == offset and not found:
                    break
                offset = next_offset
            self.offsets[queue] = offset
        return got

    def pull(self, want, timeout_s=30):
        """Pulls until `want` messages came or `timeout_s` passed; returns all."""
        got = []
        deadline = time.monotonic() + timeout_s
        while True:
            got.extend(self.drain_once())
            if len(got) >= want or time.monotonic() >= deadline:
                return got
            time.sleep(0.2)


def wait_until(predicate, timeout_s, interval_s=0.1):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()
