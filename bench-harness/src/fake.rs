//! Tests of whole runs against the workspace's fake name server + broker
//! (ferrocket-testkit): enough of the Remoting protocol (cluster info,
//! routes, topic creation, sends, batches, long-polled pulls, max offsets)
//! for the harness's modes to run end to end and for their counts to be
//! checked against what the fake stored.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use ferrocket_protocol::body::{encode_json, ClusterInfo};
use ferrocket_protocol::RemotingCommand;
use ferrocket_testkit::broker::{self, Cluster};
use ferrocket_testkit::server::{ok_with_body, serve};

use crate::args::{Cli, Mode, WorkloadArgs};
use crate::message::SendMode;
use crate::target::TargetSpec;
use crate::window::Session;

/// The shared fake broker and name server, holding pulls like a broker's
/// long polling.
async fn start_fake() -> Cluster {
    let fake = broker::start(&[]).await;
    fake.state.lock().unwrap().long_poll = true;
    fake
}

fn workload(extra: &[&str]) -> WorkloadArgs {
    let mut args = vec![
        "ferrocket-bench",
        "produce",
        "--warmup",
        "0",
        "--duration",
        "1",
        "--size",
        "64",
    ];
    args.extend_from_slice(extra);
    let Mode::Produce(single) = Cli::try_parse_from(args).unwrap().mode else {
        unreachable!()
    };
    single.workload.validate(true).unwrap();
    single.workload
}

fn spec(namesrv: &str) -> TargetSpec {
    TargetSpec {
        label: Some("fake".into()),
        namesrv: namesrv.to_string(),
        broker_pids: vec![std::process::id()],
        broker_pid_children: false,
        broker_config: None,
        tls: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_counts_match_what_the_broker_stored() {
    let fake = start_fake().await;
    let w = workload(&["--messages", "500", "--queues", "4", "--inflight", "8"]);
    let mut session = Session::open(&spec(&fake.namesrv.addr), &w, false, 1, true)
        .await
        .unwrap();
    assert_eq!(session.target.queues.len(), 4);
    session.produce(0, 30, Instant::now()).await.unwrap();
    let totals = &session.result.totals;
    assert!(totals.sent_msgs >= 500, "sent {}", totals.sent_msgs);
    assert_eq!(totals.sent_msgs as usize, fake.stored("BenchTopic"));
    assert_eq!(totals.sent_bytes, totals.sent_msgs * 64);
    assert_eq!(totals.send_latency.len(), totals.sent_msgs);
    assert_eq!(totals.pulls, 0);
    assert!(totals.errors.is_empty(), "{:?}", totals.errors);
    assert!(session.result.broker_cpu.is_some());
    assert_eq!(session.result.windows, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_driver_counts_match_too() {
    let fake = start_fake().await;
    let w = workload(&["--driver", "client", "--messages", "300", "--inflight", "4"]);
    let mut session = Session::open(&spec(&fake.namesrv.addr), &w, false, 1, true)
        .await
        .unwrap();
    session.produce(0, 30, Instant::now()).await.unwrap();
    let totals = &session.result.totals;
    assert!(totals.sent_msgs >= 300);
    assert_eq!(totals.sent_msgs as usize, fake.stored("BenchTopic"));
    assert!(totals.errors.is_empty(), "{:?}", totals.errors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oneway_sends_all_arrive() {
    let fake = start_fake().await;
    let w = workload(&[
        "--send-mode",
        "oneway",
        "--messages",
        "1000",
        "--inflight",
        "16",
    ]);
    let mut session = Session::open(&spec(&fake.namesrv.addr), &w, false, 1, true)
        .await
        .unwrap();
    session.produce(0, 30, Instant::now()).await.unwrap();
    let sent = session.result.totals.sent_msgs as usize;
    assert!(sent >= 1000, "sent {sent}");
    // No acknowledgements: wait for the fake to store what was written.
    let deadline = Instant::now() + Duration::from_secs(5);
    while fake.stored("BenchTopic") < sent && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(fake.stored("BenchTopic"), sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_sends_count_every_message() {
    let fake = start_fake().await;
    let w = workload(&["--send-mode", "batch", "--batch", "10", "--messages", "200"]);
    assert_eq!(w.send_mode, SendMode::Batch);
    let mut session = Session::open(&spec(&fake.namesrv.addr), &w, false, 1, true)
        .await
        .unwrap();
    session.produce(0, 30, Instant::now()).await.unwrap();
    let totals = &session.result.totals;
    assert_eq!(totals.sent_msgs % 10, 0);
    assert_eq!(totals.sent_msgs, totals.requests * 10);
    assert_eq!(totals.sent_msgs as usize, fake.stored("BenchTopic"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_receives_everything_sent_at_a_fixed_rate() {
    let fake = start_fake().await;
    let w = workload(&["--rate", "2000", "--queues", "2", "--suspend-ms", "200"]);
    let mut session = Session::open(&spec(&fake.namesrv.addr), &w, true, 77, true)
        .await
        .unwrap();
    session.e2e(0, 1, Instant::now()).await.unwrap();
    let totals = &session.result.totals;
    assert!(totals.sent_msgs > 0);
    assert_eq!(totals.received_msgs, totals.sent_msgs);
    assert_eq!(totals.e2e_latency.len(), totals.received_msgs);
    assert_eq!(totals.send_latency.len(), totals.requests);
    assert!(totals.pulls > 0);
    assert!(totals.errors.is_empty(), "{:?}", totals.errors);
    assert!(!session.result.samples.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_drains_whole_preloads_until_the_duration_is_measured() {
    let fake = start_fake().await;
    let w = workload(&["--queues", "3", "--pull-batch", "7"]);
    let mut session = Session::open(&spec(&fake.namesrv.addr), &w, true, 5, true)
        .await
        .unwrap();
    let preload = crate::args::Preload {
        messages: 300,
        from_start: false,
    };
    session.drain(preload, 1, Instant::now()).await.unwrap();
    let totals = &session.result.totals;
    assert_eq!(totals.sent_msgs, 0, "preload is not measured");
    let received = totals.received_msgs;
    assert!(received >= 300 && received % 300 == 0, "{received}");
    assert_eq!(fake.stored("BenchTopic") as u64, received);
    assert_eq!(totals.received_bytes, received * 64);
    // A 300-message drain takes milliseconds: it is repeated until the
    // asked second is measured (less the last round's 50 ms slack).
    assert!(
        session.result.measured_s >= 0.95,
        "{}",
        session.result.measured_s
    );
    assert_eq!(totals.pull_latency.len(), totals.pulls);
    assert!(totals.pulls >= 300 / 7);
    assert!(totals.errors.is_empty(), "{:?}", totals.errors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_without_brokers_is_a_setup_error() {
    // A name server that answers cluster info with no broker.
    let namesrv = serve(Arc::new(|request: RemotingCommand| {
        Some(ok_with_body(&request, encode_json(&ClusterInfo::default())))
    }))
    .await;
    let error = Session::open(&spec(&namesrv.addr), &workload(&[]), false, 1, true)
        .await
        .err()
        .unwrap();
    assert!(error.to_string().contains("no master broker"), "{error}");
}
