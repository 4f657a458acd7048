//! The push exporters: `metricsExporterType=OTLP_GRPC` sends the broker's
//! metrics to a small OTLP collector this test runs (a tonic server of
//! opentelemetry-proto's MetricsService on a port it chose), `LOG` writes
//! them to the broker's log, an unreachable collector only warns, and a
//! bad exporter setting stops the start with a clear error.

mod harness;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use harness::failover::send;
use harness::requests::create_topic;
use harness::{free_port, ready_timeout, wait_for, BrokerOpts, ServerProcess};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point, Metric};

/// One export as received, with its `x-team` header.
type Received = (ExportMetricsServiceRequest, Option<String>);

/// What the collector received.
#[derive(Clone, Default)]
struct Collector {
    received: Arc<Mutex<Vec<Received>>>,
}

#[tonic::async_trait]
impl MetricsService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        let team = (request.metadata().get("x-team"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = request.into_inner();
        self.received.lock().unwrap().push((body, team));
        Ok(tonic::Response::new(ExportMetricsServiceResponse {
            partial_success: None,
        }))
    }
}

/// Serves the collector on 127.0.0.1:`port` until the runtime is dropped.
fn start_collector(runtime: &tokio::runtime::Runtime, port: u16) -> Collector {
    let collector = Collector::default();
    let service = MetricsServiceServer::new(collector.clone());
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(addr))
        .unwrap();
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    runtime.spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(incoming),
    );
    collector
}

fn string_attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    let kv = attributes.iter().find(|kv| kv.key == key)?;
    match kv.value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

fn metrics(request: &ExportMetricsServiceRequest) -> impl Iterator<Item = &Metric> {
    (request.resource_metrics.iter())
        .flat_map(|rm| &rm.scope_metrics)
        .flat_map(|sm| &sm.metrics)
}

/// `rocketmq_messages_in` of `topic` in `request`, if there.
fn messages_in(request: &ExportMetricsServiceRequest, topic: &str) -> Option<u64> {
    let metric = metrics(request).find(|m| m.name == "rocketmq_messages_in")?;
    let Some(metric::Data::Sum(sum)) = &metric.data else {
        panic!("rocketmq_messages_in is not a sum: {metric:?}");
    };
    assert!(sum.is_monotonic, "{metric:?}");
    let point = (sum.data_points.iter())
        .find(|p| string_attr(&p.attributes, "topic").as_deref() == Some(topic))?;
    assert_eq!(
        string_attr(&point.attributes, "node_type").as_deref(),
        Some("broker")
    );
    match point.value {
        Some(number_data_point::Value::AsInt(n)) => Some(n as u64),
        other => panic!("not an integer: {other:?}"),
    }
}

fn broker_with(namesrv: &harness::Namesrv, settings: &[String]) -> harness::Broker {
    let extra_args = (settings.iter())
        .flat_map(|s| ["--set".to_string(), s.clone()])
        .collect();
    harness::Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            extra_args,
            ..BrokerOpts::default()
        },
    )
}

fn send_some(broker: &harness::Broker, topic: &str, count: usize) {
    let mut conn = broker.connect();
    create_topic(&mut conn, topic, 4);
    for n in 0..count {
        assert_eq!(send(&mut conn, topic, n, format!("m{n}"), true), 0);
    }
}

#[test]
fn otlp_export_reaches_the_collector_with_rocketmq_names() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let port = free_port();
    let collector = start_collector(&runtime, port);
    let namesrv = harness::Namesrv::start();
    let broker = broker_with(
        &namesrv,
        &[
            "metricsExporterType=OTLP_GRPC".into(),
            format!("metricsGrpcExporterTarget=http://127.0.0.1:{port}"),
            "metricsGrpcExporterHeader=x-team:mq".into(),
            "metricGrpcExporterIntervalInMills=300".into(),
            "metricsLabel=env:test".into(),
        ],
    );
    send_some(&broker, "OtlpTopic", 3);
    let exported = wait_for(ready_timeout(), || {
        let received = collector.received.lock().unwrap();
        (received.iter().rev())
            .find(|(request, _)| messages_in(request, "OtlpTopic") == Some(3))
            .cloned()
    });
    let Some((request, team)) = exported else {
        panic!(
            "no export with rocketmq_messages_in{{topic=OtlpTopic}} = 3; broker output:\n{}",
            broker.process.output()
        );
    };
    assert_eq!(team.as_deref(), Some("mq"), "metricsGrpcExporterHeader");
    let resource = (request.resource_metrics[0].resource.as_ref()).expect("a resource");
    let attr = |key| string_attr(&resource.attributes, key);
    assert_eq!(attr("service.name").as_deref(), Some("ferrocket-broker"));
    assert!(attr("service.instance.id").is_some(), "{resource:?}");
    let names: Vec<&str> = metrics(&request).map(|m| m.name.as_str()).collect();
    for name in [
        "rocketmq_throughput_in",
        "rocketmq_rpc_latency",
        "rocketmq_topic_number",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let latency = metrics(&request)
        .find(|m| m.name == "rocketmq_rpc_latency")
        .unwrap();
    assert_eq!(latency.unit, "milliseconds");
    let Some(metric::Data::Histogram(histogram)) = &latency.data else {
        panic!("rocketmq_rpc_latency is not a histogram: {latency:?}");
    };
    let point = &histogram.data_points[0];
    assert_eq!(point.bucket_counts.len(), point.explicit_bounds.len() + 1);
    assert_eq!(
        string_attr(&point.attributes, "env").as_deref(),
        Some("test")
    );
}

#[test]
fn an_unreachable_collector_only_warns() {
    // A port nothing listens on.
    let port = free_port();
    let namesrv = harness::Namesrv::start();
    let broker = broker_with(
        &namesrv,
        &[
            "metricsExporterType=OTLP_GRPC".into(),
            format!("metricsGrpcExporterTarget=http://127.0.0.1:{port}"),
            "metricGrpcExporterIntervalInMills=200".into(),
            "metricGrpcExporterTimeOutInMills=500".into(),
        ],
    );
    let warned = wait_for(ready_timeout(), || {
        let output = broker.process.output();
        output
            .contains("metrics export to the OTLP collector failed")
            .then_some(output)
    });
    let output = warned.expect("a warning about the failed export");
    send_some(&broker, "StillServing", 2);
    // Several exports have failed by now, one warning said so.
    std::thread::sleep(Duration::from_millis(1_000));
    let output_after = broker.process.output();
    let warnings = output_after
        .matches("export to the OTLP collector failed")
        .count();
    assert_eq!(warnings, 1, "warnings are rate-limited:\n{output}");
}

#[test]
fn log_exporter_writes_metric_lines() {
    let namesrv = harness::Namesrv::start();
    let broker = broker_with(
        &namesrv,
        &[
            "metricsExporterType=LOG".into(),
            "metricLoggingExporterIntervalInMills=300".into(),
        ],
    );
    send_some(&broker, "LogTopic", 2);
    let line = wait_for(ready_timeout(), || {
        let output = broker.process.output();
        (output.lines())
            .find(|l| l.contains("rocketmq_messages_in{") && l.contains(r#"topic="LogTopic""#))
            .map(str::to_string)
    });
    let line = line.unwrap_or_else(|| panic!("no metric line:\n{}", broker.process.output()));
    assert!(line.trim_end().ends_with(" 2"), "{line}");
    assert!(line.contains(r#"node_type="broker""#), "{line}");
    let output = broker.process.output();
    assert!(
        output.contains("rocketmq_rpc_latency{") && output.contains("buckets=["),
        "{output}"
    );
}

/// Runs a broker that must refuse to start; its output.
fn refused_start(setting: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = [
        "broker",
        "--listen-addr",
        "127.0.0.1",
        "--listen-port",
        &free_port().to_string(),
        "--namesrv-addr",
        "127.0.0.1:1",
        "--store-path-root-dir",
        &dir.path().display().to_string(),
        "--set",
        setting,
    ]
    .map(str::to_string)
    .to_vec();
    let mut process = ServerProcess::spawn("config-check", &args, dir.path()).unwrap();
    let status = process.wait_exit(Duration::from_secs(30));
    let output = process.output();
    let Some(status) = status else {
        process.kill();
        panic!("a broker with {setting} still runs; output:\n{output}");
    };
    assert!(!status.success(), "{output}");
    output
}

#[test]
fn bad_exporter_settings_stop_the_start() {
    let output = refused_start("metricsExporterType=OTEL");
    assert!(
        output.contains("expected DISABLE, OTLP_GRPC, PROM or LOG"),
        "{output}"
    );
    let output = refused_start("metricsExporterType=OTLP_GRPC");
    assert!(
        output.contains("needs metricsGrpcExporterTarget"),
        "{output}"
    );
}
