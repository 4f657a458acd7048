//! `/metrics` of the name server (`metricsExporterType=PROM`: request
//! latencies under RocketMQ's `rocketmq_rpc_latency` names, the brokers and
//! topics registered) and of `ferrocket proxy --metrics-port` (Java's
//! `rocketmq_proxy_up`), served over plain HTTP. The broker's is checked
//! with a real client in tests/interop/test_metrics.py.

mod harness;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Instant;

use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::RemotingCommand;
use harness::{ferrocket_bin, free_port, ready_timeout, BrokerOpts, NamesrvOpts};

fn http_get(port: u16, path: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

fn value(text: &str, prefix: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with(prefix))?;
    line.rsplit(' ').next()?.parse().ok()
}

#[test]
fn the_name_server_exposes_its_request_latencies_and_registrations() {
    let port = free_port();
    let namesrv = harness::Namesrv::start_with(NamesrvOpts {
        extra_args: vec![
            "--set".into(),
            "metricsExporterType=PROM".into(),
            "--set".into(),
            format!("metricsPromExporterPort={port}"),
        ],
        ..NamesrvOpts::default()
    });
    let _broker = harness::Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = namesrv.connect();
    for _ in 0..3 {
        conn.request(RemotingCommand::request(
            request_code::GET_BROKER_CLUSTER_INFO,
        ));
    }
    let answer = http_get(port, "/metrics");
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(
        answer.contains("Content-Type: application/openmetrics-text"),
        "{answer}"
    );
    let node = format!("node_type=\"namesrv\",node_id=\"{}\"", namesrv.addr());
    let cluster_info = format!(
        "rocketmq_rpc_latency_milliseconds_count{{{node},protocol_type=\"remoting\",\
         request_code=\"get_broker_cluster_info\",response_code=\"success\""
    );
    assert!(
        value(&answer, &cluster_info).is_some_and(|n| n >= 3.0),
        "{answer}"
    );
    let register = "rocketmq_rpc_latency_milliseconds_count{";
    assert!(answer
        .lines()
        .any(|l| l.starts_with(register) && l.contains("register_broker")));
    let brokers = format!("ferrocket_namesrv_brokers{{{node}}}");
    assert_eq!(value(&answer, &brokers), Some(1.0), "{answer}");
    assert!(answer.trim_end().ends_with("# EOF"));
    assert!(http_get(port, "/nope").starts_with("HTTP/1.1 404"));
}

#[test]
fn the_proxy_reports_itself_up() {
    let namesrv = harness::Namesrv::start();
    let (grpc_port, metrics_port) = (free_port(), free_port());
    let mut proxy = Command::new(ferrocket_bin())
        .args([
            "proxy",
            "-n",
            &namesrv.addr(),
            "--listen-port",
            &grpc_port.to_string(),
        ])
        .args(["--metrics-port", &metrics_port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + ready_timeout();
    let answer = loop {
        if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", metrics_port)) {
            write!(stream, "GET /metrics HTTP/1.1\r\n\r\n").unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).unwrap();
            break answer;
        }
        assert!(
            Instant::now() < deadline,
            "the proxy's metrics endpoint never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    // SAFETY: signalling the child this test started, by its pid.
    unsafe { libc::kill(proxy.id() as i32, libc::SIGKILL) };
    let _ = proxy.wait();
    let up = format!(
        "rocketmq_proxy_up{{node_type=\"proxy\",cluster=\"DefaultCluster\",\
         node_id=\"127.0.0.1:{grpc_port}\",proxy_mode=\"cluster\"}} 1"
    );
    assert!(answer.contains(&up), "{answer}");
}
