//! `ferrocket-bench grpc`: the RocketMQ 5 path through a gRPC endpoint
//! (`ferrocket proxy`, or RocketMQ's proxy). Two phases on one topic:
//! sends from `--inflight` concurrent unary SendMessage calls for
//! `--duration` seconds (throughput and send latency), then receive+ack by
//! `--consumers` simple-consumer loops (ReceiveMessage of up to 32, one
//! AckMessage for the batch) until everything sent was acked. CPU per
//! message of the processes `--pid` names (broker, proxy), per phase.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use ferrocket_grpc::pb::{self, messaging_service_client::MessagingServiceClient};
use tonic::transport::Channel;

use crate::error::BenchError;
use crate::hist::LatencyHistogram;
use crate::proc_stat::CpuProbe;

type Client = MessagingServiceClient<Channel>;

#[derive(Debug, Args)]
pub struct GrpcArgs {
    /// The gRPC endpoint, host:port.
    #[arg(long, default_value = "127.0.0.1:8081")]
    pub endpoint: String,
    /// An existing topic.
    #[arg(long)]
    pub topic: String,
    /// Consumer group of the receive phase.
    #[arg(long, default_value = "ferrocket-bench-grpc")]
    pub group: String,
    /// Seconds of the send phase.
    #[arg(long, default_value_t = 10)]
    pub duration: u64,
    /// Concurrent SendMessage calls.
    #[arg(long, default_value_t = 64)]
    pub inflight: usize,
    /// Concurrent receive+ack loops.
    #[arg(long, default_value_t = 8)]
    pub consumers: usize,
    /// Message body size in bytes.
    #[arg(long, default_value_t = 1024)]
    pub body_bytes: usize,
    /// Processes whose CPU is measured (broker, proxy).
    #[arg(long = "pid")]
    pub pids: Vec<u32>,
}

fn request<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "x-mq-client-id",
        "ferrocket-bench-grpc".parse().expect("ascii"),
    );
    request
}

fn resource(name: &str) -> Option<pb::Resource> {
    Some(pb::Resource {
        name: name.to_string(),
        ..Default::default()
    })
}

fn ok(status: &Option<pb::Status>) -> bool {
    status
        .as_ref()
        .is_some_and(|s| s.code == pb::Code::Ok as i32)
}

async fn connect(endpoint: &str) -> Result<Client, BenchError> {
    let channel = Channel::from_shared(format!("http://{endpoint}"))
        .map_err(|e| BenchError::Setup(format!("bad endpoint {endpoint}: {e}")))?
        .connect()
        .await
        .map_err(|e| BenchError::Setup(format!("cannot connect to {endpoint}: {e}")))?;
    Ok(MessagingServiceClient::new(channel))
}

/// One send loop: unary sends until `stop`; latencies into `hist`.
async fn send_loop(
    mut client: Client,
    args: Arc<GrpcArgs>,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    hist: Arc<Mutex<LatencyHistogram>>,
) {
    let body = vec![b'g'; args.body_bytes];
    let mut local = LatencyHistogram::new();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let message = pb::Message {
            topic: resource(&args.topic),
            system_properties: Some(pb::SystemProperties {
                message_id: format!(
                    "{:016X}{:016X}",
                    std::process::id(),
                    n ^ (Arc::as_ptr(&stop) as u64)
                ),
                message_type: pb::MessageType::Normal as i32,
                ..Default::default()
            }),
            body: body.clone(),
            ..Default::default()
        };
        let started = Instant::now();
        let answer = client
            .send_message(request(pb::SendMessageRequest {
                messages: vec![message],
            }))
            .await;
        if answer.is_ok_and(|a| ok(&a.into_inner().status)) {
            local.record_ns(started.elapsed().as_nanos() as u64);
            sent.fetch_add(1, Ordering::Relaxed);
        }
    }
    if let Ok(mut hist) = hist.lock() {
        hist.merge(&local);
    }
}

/// One receive+ack loop until `acked` reaches `target` or `deadline`.
async fn receive_loop(
    mut client: Client,
    args: Arc<GrpcArgs>,
    target: u64,
    acked: Arc<AtomicU64>,
    deadline: Instant,
) {
    let queue = pb::MessageQueue {
        topic: resource(&args.topic),
        id: -1,
        ..Default::default()
    };
    while acked.load(Ordering::Relaxed) < target && Instant::now() < deadline {
        let receive = pb::ReceiveMessageRequest {
            group: resource(&args.group),
            message_queue: Some(queue.clone()),
            batch_size: 32,
            invisible_duration: Some(prost_types::Duration {
                seconds: 60,
                nanos: 0,
            }),
            long_polling_timeout: Some(prost_types::Duration {
                seconds: 5,
                nanos: 0,
            }),
            ..Default::default()
        };
        let Ok(answer) = client.receive_message(request(receive)).await else {
            continue;
        };
        let mut stream = answer.into_inner();
        let mut entries = Vec::new();
        while let Ok(Some(item)) = stream.message().await {
            if let Some(pb::receive_message_response::Content::Message(m)) = item.content {
                let sys = m.system_properties.unwrap_or_default();
                entries.push(pb::AckMessageEntry {
                    message_id: sys.message_id,
                    receipt_handle: sys.receipt_handle.unwrap_or_default(),
                    lite_topic: None,
                });
            }
        }
        if entries.is_empty() {
            continue;
        }
        let count = entries.len() as u64;
        let ack = pb::AckMessageRequest {
            group: resource(&args.group),
            topic: resource(&args.topic),
            entries,
        };
        if client
            .ack_message(request(ack))
            .await
            .is_ok_and(|a| ok(&a.into_inner().status))
        {
            acked.fetch_add(count, Ordering::Relaxed);
        }
    }
}

/// CPU-µs per message of the measured processes over `[before, now]`.
fn cpu_us_per_msg(probe: &CpuProbe, before: u64, messages: u64) -> Option<f64> {
    if probe.roots().is_empty() || messages == 0 {
        return None;
    }
    let ticks = probe.sample().total().saturating_sub(before);
    Some(probe.seconds(ticks) * 1e6 / messages as f64)
}

pub fn run(args: GrpcArgs) -> Result<(), BenchError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| BenchError::Setup(format!("runtime: {e}")))?;
    runtime.block_on(run_phases(Arc::new(args)))
}

async fn run_phases(args: Arc<GrpcArgs>) -> Result<(), BenchError> {
    let probe = CpuProbe::new(args.pids.clone(), true);
    let client = connect(&args.endpoint).await?;
    // The group starts at the queues' ends: pop once before sending.
    let warm = Arc::new(AtomicU64::new(0));
    receive_loop(
        client.clone(),
        Arc::clone(&args),
        1,
        warm,
        Instant::now() + Duration::from_secs(6),
    )
    .await;

    let (stop, sent) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
    );
    let hist = Arc::new(Mutex::new(LatencyHistogram::new()));
    let cpu_before = probe.sample().total();
    let started = Instant::now();
    let senders: Vec<_> = (0..args.inflight.max(1))
        .map(|_| {
            tokio::spawn(send_loop(
                client.clone(),
                Arc::clone(&args),
                Arc::clone(&stop),
                Arc::clone(&sent),
                Arc::clone(&hist),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(args.duration)).await;
    stop.store(true, Ordering::Relaxed);
    for task in senders {
        let _ = task.await;
    }
    let send_secs = started.elapsed().as_secs_f64();
    let sent = sent.load(Ordering::Relaxed);
    let send_cpu = cpu_us_per_msg(&probe, cpu_before, sent);

    let acked = Arc::new(AtomicU64::new(0));
    let cpu_before = probe.sample().total();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.duration * 6 + 30);
    let receivers: Vec<_> = (0..args.consumers.max(1))
        .map(|_| {
            tokio::spawn(receive_loop(
                client.clone(),
                Arc::clone(&args),
                sent,
                Arc::clone(&acked),
                deadline,
            ))
        })
        .collect();
    for task in receivers {
        let _ = task.await;
    }
    let receive_secs = started.elapsed().as_secs_f64();
    let acked = acked.load(Ordering::Relaxed);
    let receive_cpu = cpu_us_per_msg(&probe, cpu_before, acked);

    let hist = hist
        .lock()
        .map_err(|_| BenchError::Setup("histogram lock".into()))?;
    let ms = |p: f64| hist.percentile_ns(p) as f64 / 1e6;
    let cpu = |c: Option<f64>| c.map_or("-".to_string(), |c| format!("{c:.1}"));
    println!(
        "== grpc: {} ({} B bodies, {} in flight, {} receive loops) ==",
        args.endpoint, args.body_bytes, args.inflight, args.consumers
    );
    println!(
        "  send:         {:>9.0} msg/s  ({sent} in {send_secs:.1} s), p50 {:.2} ms, p99 {:.2} ms, measured CPU {} us/msg",
        sent as f64 / send_secs,
        ms(50.0),
        ms(99.0),
        cpu(send_cpu)
    );
    println!(
        "  receive+ack:  {:>9.0} msg/s  ({acked} of {sent} in {receive_secs:.1} s), measured CPU {} us/msg",
        acked as f64 / receive_secs,
        cpu(receive_cpu)
    );
    if acked < sent {
        return Err(BenchError::Setup(format!(
            "only {acked} of {sent} messages were received and acked"
        )));
    }
    Ok(())
}
