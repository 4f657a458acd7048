"""The Prometheus endpoint (`metricsExporterType=PROM`) under a known load from
the Apache RocketMQ C++ client: the exposition parses with the official
Prometheus client's strict OpenMetrics parser, carries RocketMQ 5's metric
names and labels, counts exactly the messages sent, shows the lag of a
consumer that stopped, and has series for every query of the Grafana
dashboard."""

import json
import re
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from conftest import Cluster, free_port
from interop_helpers import make_message
from naming import unique_name

SENT_FIRST = 10
SENT_AFTER_STOP = 5
BODY_BYTES_MIN = len("metrics-0")
DELIVERY_TIMEOUT_S = 60
SETTLE_TIMEOUT_S = 30


@pytest.fixture
def metrics_cluster():
    port = free_port()
    c = Cluster(
        "metrics",
        broker_args=(
            "--set", "metricsExporterType=PROM",
            "--set", f"metricsPromExporterPort={port}",
            "--set", "metricsLabel=env:interop",
        ),
    )
    c.metrics_url = f"http://127.0.0.1:{port}"
    try:
        yield c
    finally:
        c.stop()


def scrape(cluster, path="/metrics"):
    with urllib.request.urlopen(cluster.metrics_url + path, timeout=10) as answer:
        assert answer.status == 200
        return answer.headers.get("Content-Type"), answer.read().decode()


def samples(cluster):
    """Every sample of a scrape, parsed strictly: (name, labels, value)."""
    content_type, text = scrape(cluster)
    assert content_type.startswith("application/openmetrics-text"), content_type
    out = []
    for family in text_string_to_metric_families(text):
        out.extend((s.name, s.labels, s.value) for s in family.samples)
    return out


def value(all_samples, name, **labels):
    """The sum of `name`'s samples whose labels include `labels`."""
    found = [v for n, l, v in all_samples if n == name and labels.items() <= l.items()]
    return sum(found) if found else None


def wait_for(cluster, check, what):
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:
        current = samples(cluster)
        if check(current):
            return current
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not seen within {SETTLE_TIMEOUT_S} s")
        time.sleep(0.5)


def test_metrics_count_a_known_load_and_a_stopped_consumers_lag(metrics_cluster, clients):
    c = metrics_cluster
    topic = c.create_topic(unique_name("MetricsTopic"))
    group = unique_name("MetricsCG")
    producer = clients.producer(c.namesrv_addr)
    for i in range(SENT_FIRST):
        producer.send_sync(make_message(topic, f"metrics-{i}"))

    received = set()
    consumer = clients.push_consumer(
        c.namesrv_addr, topic, lambda msg: received.add(msg.body.decode()), group=group
    )
    deadline = time.monotonic() + DELIVERY_TIMEOUT_S
    while len(received) < SENT_FIRST and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(received) == SENT_FIRST
    # Committed offsets reach the broker: the lag of what was consumed is 0.
    wait_for(
        c,
        lambda s: value(s, "rocketmq_consumer_lag_messages", topic=topic, consumer_group=group) == 0,
        "the consumer's offsets",
    )
    clients._started.remove(consumer)
    consumer.shutdown()
    for i in range(SENT_AFTER_STOP):
        producer.send_sync(make_message(topic, f"after-stop-{i}"))

    s = wait_for(
        c,
        lambda s: value(s, "rocketmq_consumer_lag_messages", topic=topic, consumer_group=group)
        == SENT_AFTER_STOP,
        "the stopped consumer's lag",
    )
    total = SENT_FIRST + SENT_AFTER_STOP
    common = {"cluster": "DefaultCluster", "node_type": "broker", "env": "interop"}
    assert value(s, "rocketmq_messages_in_total", topic=topic, message_type="normal", **common) == total
    assert value(s, "rocketmq_throughput_in_total", topic=topic) >= total * BODY_BYTES_MIN
    assert value(s, "rocketmq_message_size_count", topic=topic) == total
    assert value(s, "rocketmq_messages_out_total", topic=topic, consumer_group=group) == SENT_FIRST
    assert value(s, "rocketmq_consumer_ready_messages", topic=topic, consumer_group=group) == SENT_AFTER_STOP
    lag_ms = value(s, "rocketmq_consumer_lag_latency_milliseconds", topic=topic, consumer_group=group)
    assert lag_ms is not None and lag_ms >= 0
    sends = sum(
        v for n, l, v in s
        if n == "rocketmq_rpc_latency_milliseconds_count"
        and l.get("request_code", "").startswith("send_message")
        and l.get("response_code") == "success"
    )
    assert sends >= total
    assert value(s, "rocketmq_producer_connections", language="cpp") >= 1
    assert value(s, "rocketmq_topic_number") >= 1
    assert value(s, "rocketmq_storage_size_bytes") > 0
    assert value(s, "rocketmq_storage_flush_behind_bytes") is not None
    assert value(s, "ferrocket_shard_connections") >= 1


def test_health_and_unknown_paths(metrics_cluster):
    _, body = scrape(metrics_cluster, "/-/healthy")
    assert body == "OK\n"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(metrics_cluster.metrics_url + "/nothing", timeout=10)
    assert refused.value.code == 404


SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}
DASHBOARD = Path(__file__).resolve().parents[2] / "monitoring" / "grafana-dashboard.json"
# Series the C++ client cannot make: it has no transactional producer and
# no pop consumer. Their families must be declared (an idle broker declares
# every family); tests/transactions.rs and the pop tests count them.
NOT_UNDER_THIS_LOAD = {
    "rocketmq_commit_messages_total",
    "rocketmq_rollback_messages_total",
    "rocketmq_consumer_inflight_messages",
}
METRIC_NAME = re.compile(r"\b(?:rocketmq|ferrocket)_[a-z_]+")
GROUPED_BY = re.compile(r"\bby \(([^)]*)\)")
SELECTOR = re.compile(r"\b((?:rocketmq|ferrocket)_[a-z_]+)\{([^}]*)\}")


def dashboard_queries():
    """Each panel's (title, expr)."""
    model = json.loads(DASHBOARD.read_text())
    return model, [
        (panel["title"], target["expr"])
        for panel in model["panels"]
        for target in panel.get("targets", [])
    ]


def labels_asked(expr):
    """The label names an expr groups by or selects on."""
    names = set()
    for group in GROUPED_BY.findall(expr):
        names.update(n.strip() for n in group.split(",") if n.strip())
    for _, selector in SELECTOR.findall(expr):
        names.update(re.findall(r"([a-z_]+)\s*(?:=~|!~|!=|=)", selector))
    return names


def dashboard_gaps(text, queries):
    """What the dashboard asks of this scrape that it does not have: names
    with no series (or, for NOT_UNDER_THIS_LOAD, no family) and labels
    none of a name's series carry."""
    declared, series = set(), {}
    for family in text_string_to_metric_families(text):
        declared.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ("",)))
        for sample in family.samples:
            series.setdefault(sample.name, set()).update(sample.labels)
    gaps = []
    for title, expr in queries:
        for name in sorted(set(METRIC_NAME.findall(expr))):
            if name in NOT_UNDER_THIS_LOAD:
                if name not in declared:
                    gaps.append(f"{title}: {name} is not a family the broker declares")
            elif name not in series:
                gaps.append(f"{title}: no series of {name}")
            elif labels_asked(expr) - series[name] - {"le"}:
                missing = sorted(labels_asked(expr) - series[name] - {"le"})
                gaps.append(f"{title}: {name} has no label {missing}")
    return gaps


def test_every_dashboard_query_has_series_under_a_known_load(metrics_cluster, clients):
    """monitoring/grafana-dashboard.json charts series the broker exports:
    after sends, a consumer that stays online and a message moved to the
    DLQ, every panel's query finds series of its metrics with the labels it
    groups by and selects on."""
    c = metrics_cluster
    model, queries = dashboard_queries()
    # Grafana's import offers a data-source picker for each declared input.
    inputs = model.get("__inputs", [])
    assert [(i["name"], i["type"], i["pluginId"]) for i in inputs] == [
        ("DS_PROMETHEUS", "datasource", "prometheus")
    ], inputs
    chosen = [v for v in model["templating"]["list"] if v["name"] == "datasource"]
    assert chosen and chosen[0]["current"]["value"] == "${DS_PROMETHEUS}", chosen
    assert queries, "the dashboard queries no metrics"

    topic = c.create_topic(unique_name("DashTopic"))
    group = unique_name("DashCG")
    # No retries: the message the consumer refuses goes straight to the DLQ.
    c.admin("group", "update", "-g", group, "-b", c.broker_addr, "--retry-max-times", "0")
    producer = clients.producer(c.namesrv_addr)
    for i in range(SENT_FIRST):
        producer.send_sync(make_message(topic, f"dash-{i}"))
    received = set()

    def on_message(msg):
        body = msg.body.decode()
        received.add(body)
        if body == "dash-0":
            raise RuntimeError("refused: to the DLQ")

    clients.push_consumer(c.namesrv_addr, topic, on_message, group=group)
    deadline = time.monotonic() + DELIVERY_TIMEOUT_S
    while time.monotonic() < deadline:
        _, text = scrape(c)
        gaps = dashboard_gaps(text, queries)
        if not gaps:
            return
        time.sleep(0.5)
    raise AssertionError(f"{len(received)} of {SENT_FIRST} consumed; gaps:\n" + "\n".join(gaps))
