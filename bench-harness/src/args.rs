//! Command-line options. Every option is also written to the JSON report.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Serialize;

use crate::error::BenchError;
use crate::message::{SendMode, STAMP_BYTES};

/// Throughput and latency harness for any RocketMQ Remoting name server
/// (Ferrocket, Apache RocketMQ, rocketmq-rust).
#[derive(Debug, Parser)]
#[command(name = "ferrocket-bench", version)]
pub struct Cli {
    #[command(subcommand)]
    pub mode: Mode,
}

#[derive(Debug, Subcommand)]
pub enum Mode {
    /// Send as fast as allowed (or at --rate) and measure send latency.
    Produce(SingleArgs),
    /// Preload a backlog, then measure how fast pulls drain it.
    Consume(ConsumeArgs),
    /// Send at --rate while long-polling consumers receive; measure the
    /// send-to-receive latency carried in each message.
    E2e(SingleArgs),
    /// The same workload against two name servers, in alternating rounds.
    Compare(CompareArgs),
    /// Send, then receive and ack, through a RocketMQ 5 gRPC endpoint
    /// (`ferrocket proxy`).
    Grpc(crate::grpc::GrpcArgs),
    /// A null name server and broker that answers every send as stored and
    /// keeps nothing: what the client, the wire and this host allow.
    Ceiling(crate::ceiling::CeilingArgs),
}

/// How producers drive their connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Driver {
    /// One writer and one reader task per connection with a table of
    /// in-flight slots: the least harness CPU per message.
    Raw,
    /// ferrocket-client's `Connection`: one task per in-flight request.
    Client,
}

/// Header encoding of requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HeaderEncoding {
    /// JSON headers (the Java client's default).
    Json,
    /// RocketMQ binary headers.
    Rocketmq,
}

/// The workload compare mode runs in each round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CompareWorkload {
    /// As the produce mode: send latency and throughput.
    Produce,
    /// As the e2e mode: send-to-receive latency at --rate.
    E2e,
}

/// One system under test.
#[derive(Debug, Clone, Args, Serialize)]
pub struct TargetArgs {
    /// Name server address list, "host:port;host:port".
    #[arg(short = 'n', long, default_value = "127.0.0.1:9876")]
    pub namesrv: String,
    /// Name used in tables and plots (default: the broker's version and
    /// the name server, e.g. `ferrocket-0.1.0@127.0.0.1:9876`).
    #[arg(long)]
    pub label: Option<String>,
    /// Broker process id(s), comma-separated: measures broker CPU per message.
    #[arg(long, value_delimiter = ',')]
    pub broker_pid: Vec<u32>,
    /// Count the CPU of the broker pids' child processes too (e.g. the pid of
    /// `ferrocket start`, whose children are the name server and broker).
    #[arg(long)]
    pub broker_pid_children: bool,
    /// Broker configuration file to copy into the report.
    #[arg(long)]
    pub broker_config: Option<PathBuf>,
    /// Connect over TLS, taking any certificate (a client with
    /// `tls.enable=true` against a permissive or enforcing broker).
    #[arg(long)]
    pub tls: bool,
}

/// What to send and how hard.
#[derive(Debug, Clone, Args, Serialize)]
pub struct WorkloadArgs {
    /// Topic to use; created on every master broker unless --no-create-topic.
    #[arg(long, default_value = "BenchTopic")]
    pub topic: String,
    /// Queues of the topic (read and write).
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
    /// Use the topic as it is (it must exist or be auto-created).
    #[arg(long)]
    pub no_create_topic: bool,
    /// Also run the workload against a null broker started for the run (the
    /// ceiling: it stores nothing, answers sends at once and pulls from the
    /// newest messages it holds in memory) and give each target's rate as a
    /// share of its (produce, e2e and compare; not consume).
    #[arg(long)]
    pub with_ceiling: bool,
    /// Threads of that null broker.
    #[arg(long, default_value_t = 1)]
    pub ceiling_threads: usize,
    /// Message body size in bytes (at least 16 in e2e mode: the timestamp).
    #[arg(long, default_value_t = 1024)]
    pub size: usize,
    /// Producer connections per broker.
    #[arg(long, default_value_t = 1)]
    pub connections: usize,
    /// Requests in flight per producer connection (pipelining depth).
    #[arg(long, default_value_t = 64)]
    pub inflight: usize,
    /// How each message is sent.
    #[arg(long, value_enum, default_value_t = SendMode::Sync)]
    pub send_mode: SendMode,
    /// Producer implementation.
    #[arg(long, value_enum, default_value_t = Driver::Raw)]
    pub driver: Driver,
    /// Messages per SEND_BATCH_MESSAGE request (batch mode).
    #[arg(long, default_value_t = 16)]
    pub batch: usize,
    /// Offered load in messages per second (fixed rate, latency measured from
    /// each message's intended send time). Unset: as fast as possible.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Measured seconds (after warm-up).
    #[arg(long, default_value_t = 10)]
    pub duration: u64,
    /// Stop after this many measured messages instead (still capped by
    /// --duration).
    #[arg(long)]
    pub messages: Option<u64>,
    /// Seconds of load before measuring starts (not counted).
    #[arg(long, default_value_t = 2)]
    pub warmup: u64,
    /// Per-request timeout, ms.
    #[arg(long, default_value_t = 5_000)]
    pub timeout_ms: u64,
    /// Encoding of the request headers.
    #[arg(long, value_enum, default_value_t = HeaderEncoding::Json)]
    pub header_encoding: HeaderEncoding,
    /// Producer group the sends name.
    #[arg(long, default_value = "ferrocket_bench_producer")]
    pub producer_group: String,
    /// Consumer group of the pulls (consume and e2e modes).
    #[arg(long, default_value = "ferrocket_bench_consumer")]
    pub consumer_group: String,
    /// Consumer connections per broker (consume and e2e modes).
    #[arg(long, default_value_t = 1)]
    pub consumer_connections: usize,
    /// Most messages per pull.
    #[arg(long, default_value_t = 32)]
    pub pull_batch: i32,
    /// Long-poll hold time of a pull, ms.
    #[arg(long, default_value_t = 1_000)]
    pub suspend_ms: u64,
    /// Consume by pop (POP_MESSAGE, then one BATCH_ACK_MESSAGE per pop)
    /// instead of pull; --pull-batch is then the pop batch (at most 32).
    #[arg(long)]
    pub pop: bool,
    /// Tokio worker threads of the harness (default: half the CPUs, at
    /// least 1), so the harness leaves room for a broker on the same host.
    #[arg(long)]
    pub client_threads: Option<usize>,
    /// ACL 1.0 account every request is signed with (brokers with
    /// aclEnable=true), on every target alike.
    #[arg(long, requires = "secret_key")]
    pub access_key: Option<String>,
    /// The account's secret key (not written to the report).
    #[arg(long, requires = "access_key")]
    #[serde(skip)]
    pub secret_key: Option<String>,
}

impl WorkloadArgs {
    /// The account to sign with, if one was given.
    pub fn credentials(&self) -> Option<ferrocket_client::Credentials> {
        match (&self.access_key, &self.secret_key) {
            (Some(access_key), Some(secret_key)) => Some(ferrocket_client::Credentials {
                access_key: access_key.clone(),
                secret_key: secret_key.clone(),
            }),
            _ => None,
        }
    }
}

/// Where reports go.
#[derive(Debug, Clone, Args, Serialize)]
pub struct OutputArgs {
    /// Directory for report.json and report.svg (default:
    /// target/bench/<mode>-<unix time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// No progress line each second.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct SingleArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct ConsumeArgs {
    #[command(flatten)]
    pub single: SingleArgs,
    /// Messages produced (unmeasured) before the drain is measured.
    #[arg(long, default_value_t = 200_000)]
    pub preload: u64,
    /// Drain what the topic holds from each queue's start (offset 0) to
    /// its end, once, instead of a fresh preload: with a broker restarted
    /// and the page cache dropped beforehand, the drain reads from the
    /// disk, as a consumer catching up does (see `tuning/consume.sh`).
    #[arg(long)]
    pub from_start: bool,
}

/// What consume mode produces before each measured drain.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Preload {
    /// Messages, unmeasured.
    pub messages: u64,
    /// Drain from each queue's start instead (see `ConsumeArgs::from_start`).
    pub from_start: bool,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct CompareArgs {
    /// Name server of system A.
    #[arg(long)]
    pub namesrv_a: String,
    /// Name server of system B.
    #[arg(long)]
    pub namesrv_b: String,
    /// Name of A in tables and plots (default: its broker's version and
    /// name server).
    #[arg(long)]
    pub label_a: Option<String>,
    /// Name of B (default as for A).
    #[arg(long)]
    pub label_b: Option<String>,
    /// Broker pid(s) of A, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub broker_pid_a: Vec<u32>,
    /// Broker pid(s) of B, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub broker_pid_b: Vec<u32>,
    /// Count child processes of the broker pids too.
    #[arg(long)]
    pub broker_pid_children: bool,
    /// Broker configuration file of A to copy into the report.
    #[arg(long)]
    pub broker_config_a: Option<PathBuf>,
    /// Broker configuration file of B to copy into the report.
    #[arg(long)]
    pub broker_config_b: Option<PathBuf>,
    /// Connect to A over TLS (taking any certificate).
    #[arg(long)]
    pub tls_a: bool,
    /// Connect to B over TLS.
    #[arg(long)]
    pub tls_b: bool,
    /// The workload of each round.
    #[arg(long, value_enum, default_value_t = CompareWorkload::Produce)]
    pub workload: CompareWorkload,
    /// Rounds per system (run A, B, A, B, ...).
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Seconds per round (--duration is ignored in compare mode).
    #[arg(long, default_value_t = 5)]
    pub round_secs: u64,
    #[command(flatten)]
    pub workload_args: WorkloadArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Largest message body accepted (the protocol's default limit).
pub const SIZE_BYTES_MAX: usize = ferrocket_protocol::limits::MESSAGE_BODY_BYTES_MAX_DEFAULT;
/// Most requests in flight per connection.
pub const INFLIGHT_MAX: usize = 65_536;
/// Most connections per broker.
pub const CONNECTIONS_MAX: usize = 1_024;

impl WorkloadArgs {
    /// The workload in one line, for the top of a plot; with `consumers`,
    /// how they pull or pop too.
    pub fn describe(&self, consumers: bool) -> String {
        let sends = match self.send_mode {
            SendMode::Sync => "sync sends".to_string(),
            SendMode::Oneway => "oneway sends".to_string(),
            SendMode::Batch => format!("batches of {}", self.batch),
        };
        let headers = match self.header_encoding {
            HeaderEncoding::Json => "JSON headers",
            HeaderEncoding::Rocketmq => "binary headers",
        };
        let rate = self.rate.map_or("as fast as possible".to_string(), |r| {
            format!("{r:.0} msg/s offered")
        });
        let consume = match (consumers, self.pop) {
            (false, _) => String::new(),
            (true, pop) => format!(
                ", {} consumer connection(s) {} up to {}",
                self.consumer_connections,
                if pop { "popping" } else { "pulling" },
                self.pull_batch
            ),
        };
        format!(
            "{} B bodies, {} connection(s) x {} in flight, {sends}, {headers}, {rate}{consume}, \
             {} queues",
            self.size, self.connections, self.inflight, self.queues
        )
    }

    /// Messages per request.
    pub fn messages_per_request(&self) -> usize {
        match self.send_mode {
            SendMode::Batch => self.batch,
            SendMode::Sync | SendMode::Oneway => 1,
        }
    }

    /// Checks ranges and combinations; `needs_timestamp` in e2e mode.
    pub fn validate(&self, needs_timestamp: bool) -> Result<(), BenchError> {
        let fail = |m: String| Err(BenchError::Options(m));
        if self.size > SIZE_BYTES_MAX {
            return fail(format!(
                "--size {} exceeds {SIZE_BYTES_MAX} bytes",
                self.size
            ));
        }
        if needs_timestamp && self.size < STAMP_BYTES {
            return fail(format!(
                "--size must be at least {} bytes to carry the send timestamp",
                STAMP_BYTES
            ));
        }
        if self.size == 0 {
            return fail("--size must be at least 1".into());
        }
        if !(1..=1024).contains(&self.queues) {
            return fail(format!("--queues {} is not within 1..=1024", self.queues));
        }
        if !(1..=CONNECTIONS_MAX).contains(&self.connections)
            || !(1..=CONNECTIONS_MAX).contains(&self.consumer_connections)
        {
            return fail(format!("connections must be within 1..={CONNECTIONS_MAX}"));
        }
        if !(1..=INFLIGHT_MAX).contains(&self.inflight) {
            return fail(format!("--inflight must be within 1..={INFLIGHT_MAX}"));
        }
        let batch_max = ferrocket_protocol::limits::BATCH_MESSAGES_MAX;
        if self.send_mode == SendMode::Batch && !(1..=batch_max).contains(&self.batch) {
            return fail(format!("--batch must be within 1..={batch_max}"));
        }
        let frame = self.messages_per_request() * (self.size + 64);
        if frame > ferrocket_protocol::limits::FRAME_BYTES_MAX / 2 {
            return fail(format!(
                "a request of {frame} bytes is too large; lower --batch or --size"
            ));
        }
        if let Some(rate) = self.rate {
            if !(rate.is_finite() && rate > 0.0) {
                return fail(format!("--rate {rate} must be a positive number"));
            }
        }
        if self.duration == 0 {
            return fail("--duration must be at least 1 second".into());
        }
        if !(1..=1024).contains(&self.pull_batch) {
            return fail("--pull-batch must be within 1..=1024".into());
        }
        if self.pop && self.pull_batch > 32 {
            return fail(
                "--pop takes at most 32 messages per pop: set --pull-batch 32 or less".into(),
            );
        }
        if self.client_threads == Some(0) {
            return fail("--client-threads must be at least 1".into());
        }
        Ok(())
    }

    /// Tokio worker threads to run.
    pub fn client_threads(&self) -> usize {
        self.client_threads.unwrap_or_else(|| {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            (cpus / 2).max(1)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(args).unwrap()
    }

    /// Options of `command` and its subcommands without a description.
    fn undescribed(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for arg in command.get_arguments() {
            if arg.get_help().is_none() && arg.get_id() != "help" && arg.get_id() != "version" {
                missing.push(format!("{path} --{}", arg.get_id()));
            }
        }
        for sub in command.get_subcommands() {
            undescribed(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }

    #[test]
    fn every_option_says_what_it_is() {
        let mut command = <Cli as clap::CommandFactory>::command();
        command.build();
        let mut missing = Vec::new();
        undescribed(&command, "ferrocket-bench", &mut missing);
        assert!(missing.is_empty(), "no description: {missing:?}");
    }

    #[test]
    fn defaults_are_valid() {
        let Mode::Produce(single) = parse(&["ferrocket-bench", "produce"]).mode else {
            panic!("not produce");
        };
        assert_eq!(single.target.namesrv, "127.0.0.1:9876");
        assert_eq!(single.workload.messages_per_request(), 1);
        single.workload.validate(true).unwrap();
    }

    #[test]
    fn batch_mode_and_limits() {
        let Mode::E2e(single) = parse(&[
            "ferrocket-bench",
            "e2e",
            "--send-mode",
            "batch",
            "--batch",
            "32",
            "--size",
            "8",
            "--broker-pid",
            "10,11",
        ])
        .mode
        else {
            panic!("not e2e");
        };
        assert_eq!(single.workload.messages_per_request(), 32);
        assert_eq!(single.target.broker_pid, vec![10, 11]);
        // 8 bytes cannot hold the e2e timestamp, but are fine for produce.
        assert!(single.workload.validate(true).is_err());
        single.workload.validate(false).unwrap();

        let mut workload = single.workload.clone();
        workload.rate = Some(0.0);
        assert!(workload.validate(false).is_err());
        workload.rate = Some(1e5);
        workload.batch = 100_000;
        assert!(workload.validate(false).is_err());
    }

    #[test]
    fn compare_takes_two_targets() {
        let Mode::Compare(compare) = parse(&[
            "ferrocket-bench",
            "compare",
            "--namesrv-a",
            "127.0.0.1:9876",
            "--namesrv-b",
            "127.0.0.1:19876",
            "--workload",
            "e2e",
            "--rounds",
            "2",
            "--rate",
            "1000",
        ])
        .mode
        else {
            panic!("not compare");
        };
        assert_eq!(compare.workload, CompareWorkload::E2e);
        assert_eq!(compare.rounds, 2);
        assert_eq!(compare.workload_args.rate, Some(1000.0));
        assert!(Cli::try_parse_from(["ferrocket-bench", "compare"]).is_err());
    }
}
