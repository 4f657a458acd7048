"""Helpers for the consumption interop tests: push consumers whose callback
chooses the consume status, a cluster whose broker takes extra settings
(and can be restarted on its store and port), and message records.

The binding's `PushConsumer.subscribe` only answers RECONSUME_LATER when the
callback raises, and then re-raises inside the ctypes callback, so here the
C functions are called directly with a callback that returns the status.
"""

import threading
import time
from dataclasses import dataclass

from rocketmq.client import PushConsumer, RecvMessage
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import MSG_CALLBACK_FUNC, MessageModel, _CConsumeStatus, dll

from conftest import Cluster, ServerProcess, interop_home, start_broker, start_namesrv
from naming import unique_name

CONSUME_SUCCESS = _CConsumeStatus.CONSUME_SUCCESS.value
RECONSUME_LATER = _CConsumeStatus.RECONSUME_LATER.value


@dataclass(frozen=True)
class Seen:
    """One delivery of a message to a consumer."""

    consumer: str
    id: str
    topic: str
    body: bytes
    tags: bytes
    queue_id: int
    queue_offset: int
    reconsume_times: int
    at: float


class Recorder:
    """Thread-safe list of deliveries, shared by a test's consumers."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seen = []

    def add(self, consumer, msg):
        entry = Seen(
            consumer=consumer,
            id=msg.id,
            topic=msg.topic,
            body=msg.body or b"",
            tags=msg.tags or b"",
            queue_id=msg.queue_id,
            queue_offset=msg.queue_offset,
            reconsume_times=msg.reconsume_times,
            at=time.monotonic(),
        )
        with self.lock:
            self.seen.append(entry)
        return entry

    def snapshot(self):
        with self.lock:
            return list(self.seen)

    def bodies(self, consumer=None):
        return [s.body for s in self.snapshot() if consumer is None or s.consumer == consumer]


def start_push_consumer(clients, namesrv_addr, topic, on_message, group, expression="*",
                        orderly=False, model=MessageModel.CLUSTERING, name=None, threads=2):
    """A started push consumer; `on_message(RecvMessage) -> status` decides
    the consume status (CONSUME_SUCCESS or RECONSUME_LATER). Registered with
    `clients` so the test fixture shuts it down."""
    consumer = PushConsumer(group, orderly=orderly, message_model=model)
    consumer.set_namesrv_addr(namesrv_addr)
    consumer.set_instance_name(name or unique_name("c"))
    consumer.set_thread_count(threads)

    def _callback(_consumer, msg):
        try:
            return on_message(RecvMessage(msg))
        except Exception:  # never let an exception cross the C boundary
            return RECONSUME_LATER

    func = MSG_CALLBACK_FUNC(_callback)
    consumer._callback_refs.append(func)
    ffi_check(dll.Subscribe(consumer._handle, topic.encode(), expression.encode()))
    register = dll.RegisterMessageCallbackOrderly if orderly else dll.RegisterMessageCallback
    ffi_check(register(consumer._handle, func))
    consumer.start()
    clients._started.append(consumer)
    return consumer


def stop_consumer(clients, consumer):
    """Shuts one consumer down now (and forgets it in the fixture)."""
    consumer.shutdown()
    if consumer in clients._started:
        clients._started.remove(consumer)


class ConsumptionCluster(Cluster):
    """A name server and a broker started with extra broker arguments; the
    broker can be restarted on the same store and port."""

    def __init__(self, name, broker_args=(), auto_create_topic=False):
        self.workdir = interop_home() / "servers" / unique_name(name)
        self.broker_args = list(broker_args)
        self.broker_name = unique_name("broker")
        self.auto_create_topic = auto_create_topic
        self.namesrv = start_namesrv(self.workdir / "namesrv")
        self.broker = None
        try:
            self.broker = start_broker(
                self.workdir / "broker",
                self.namesrv.addr,
                auto_create_topic,
                broker_name=self.broker_name,
                extra_args=self.broker_args,
            )
        except BaseException:
            self.namesrv.stop()
            raise

    def restart_broker(self):
        """SIGTERM, then the same command line again (same port and store)."""
        args = self.broker.popen.args[1:]
        port = self.broker.port
        code = self.broker.stop()
        assert code == 0, f"broker exited with {code} on SIGTERM:\n{self.broker.log_tail()}"
        # The new process appends to the same log: keep the old one aside so
        # the readiness line found is the new process's.
        self.broker.log_path.rename(self.broker.log_path.with_suffix(".before-restart.log"))
        self.broker = ServerProcess("broker", args, self.workdir / "broker", port)
        self.broker.wait_listening()

    def group_update(self, group, *options):
        return self.admin("group", "update", "-g", group, "-b", self.broker_addr, *options)


def wait_for(predicate, timeout_s, interval_s=0.1):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()
