//! The ceiling (`ferrocket-bench ceiling`, and `--with-ceiling` on produce
//! and compare runs): a null name server and broker on one port that
//! answers every send as stored and keeps nothing. What a produce run gets
//! from it is what this client, the wire and this host allow, so a report
//! can give a broker's figure as a share of it, measured in the same run.
//!
//! Per connection it reads what has arrived, answers every whole frame in
//! it and writes the answers back in one write: the least work a Remoting
//! server can do per send (one header decode and one encode). Once a
//! consumer shows up it also keeps each queue's newest messages in memory
//! and answers pulls from them, holding a pull until a message arrives, so
//! e2e runs have a ceiling too (`queues`).

mod queues;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use clap::Args;
use ferrocket_protocol::body::{
    encode_json, BrokerData, ClusterInfo, KvTable, QueueData, TopicRouteData,
};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::{FrameDecoder, RemotingCommand};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

use queues::{Pulled, Queues};

use crate::error::BenchError;

/// Most connections served at once; more are closed on accept.
pub const CEILING_CONNECTIONS_MAX: usize = 1_024;
/// Most server threads.
pub const CEILING_THREADS_MAX: usize = 64;
/// Room made in a connection's read buffer before each read.
const READ_BYTES_MIN: usize = 64 * 1024;
/// The first line `ferrocket-bench ceiling` prints, before the address.
const LISTENING: &str = "ceiling listening on ";
/// The names a route and the cluster info give the null broker.
const CLUSTER: &str = "CeilingCluster";
const BROKER: &str = "ceiling";
/// What every send's answer carries as its message id (an offset message
/// id of host 127.0.0.1:10911, offset 0: the bench does not read it).
const MSG_ID: &str = "7F00000100002A9F0000000000000000";

#[derive(Debug, Clone, Args, Serialize)]
pub struct CeilingArgs {
    /// Port on 127.0.0.1; 0 takes a free one (the address is printed).
    #[arg(long, default_value_t = 0)]
    pub listen_port: u16,
    /// Queues every route lists.
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
    /// Server threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
}

/// `ferrocket-bench ceiling`: serves until killed.
pub fn run(args: CeilingArgs) -> Result<(), BenchError> {
    if !(1..=1024).contains(&args.queues) {
        return Err(BenchError::Options(format!(
            "--queues {} is not within 1..=1024",
            args.queues
        )));
    }
    if !(1..=CEILING_THREADS_MAX).contains(&args.threads) {
        return Err(BenchError::Options(format!(
            "--threads {} is not within 1..={CEILING_THREADS_MAX}",
            args.threads
        )));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads)
        .thread_name("ceiling")
        .enable_io()
        // Held pulls wait with a timeout.
        .enable_time()
        .build()
        .map_err(|e| BenchError::io("tokio runtime", e))?;
    runtime.block_on(async {
        let listener = TcpListener::bind(("127.0.0.1", args.listen_port))
            .await
            .map_err(|e| BenchError::io(format!("127.0.0.1:{}", args.listen_port), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| BenchError::io("ceiling listener", e))?
            .to_string();
        println!("{LISTENING}{addr}");
        let _ = std::io::stdout().flush();
        serve(listener, Arc::new(Answers::new(&addr, args.queues))).await
    })
}

async fn serve(listener: TcpListener, answers: Arc<Answers>) -> Result<(), BenchError> {
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let (stream, _) = listener
            .accept()
            .await
            .map_err(|e| BenchError::io("ceiling accept", e))?;
        if open.fetch_add(1, Ordering::AcqRel) >= CEILING_CONNECTIONS_MAX {
            open.fetch_sub(1, Ordering::AcqRel);
            continue;
        }
        let _ = stream.set_nodelay(true);
        let (answers, open) = (Arc::clone(&answers), Arc::clone(&open));
        tokio::spawn(async move {
            connection(stream, answers).await;
            open.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

/// Answers one connection's requests until it closes or sends a frame
/// that does not decode. A held pull is answered by a task of its own
/// through the shared write half.
async fn connection(stream: TcpStream, answers: Arc<Answers>) {
    let decoder = FrameDecoder::default();
    let (mut reader, writer) = stream.into_split();
    let writer = Arc::new(Mutex::new(writer));
    let mut input = BytesMut::with_capacity(READ_BYTES_MIN);
    let mut output = BytesMut::new();
    loop {
        input.reserve(READ_BYTES_MIN);
        match reader.read_buf(&mut input).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        loop {
            match decoder.next_frame(&mut input) {
                Ok(Some(request)) => match answers.answer(&request) {
                    Some(Reply::Now(answer)) => answer.encode(&mut output),
                    Some(Reply::Hold(wait)) => {
                        hold(Arc::clone(&answers), Arc::clone(&writer), request, wait)
                    }
                    None => {}
                },
                Ok(None) => break,
                Err(error) => {
                    eprintln!("ceiling: closing a connection: {error}");
                    return;
                }
            }
        }
        if !output.is_empty() {
            if writer.lock().await.write_all(&output).await.is_err() {
                return;
            }
            output.clear();
        }
    }
}

/// Answers a pull that found nothing once a message arrives or its wait
/// passes.
fn hold(
    answers: Arc<Answers>,
    writer: Arc<Mutex<OwnedWriteHalf>>,
    request: RemotingCommand,
    wait: Duration,
) {
    tokio::spawn(async move {
        answers.queues.wait_for_message(&request, wait).await;
        if let Pulled::Answer(answer) = answers.queues.pull(&request, true) {
            let mut out = BytesMut::new();
            answer.encode(&mut out);
            let _ = writer.lock().await.write_all(&out).await;
        }
    });
}

/// What a request gets.
enum Reply {
    Now(RemotingCommand),
    /// A pull that waits for a message (at most this long).
    Hold(Duration),
}

/// The null broker's answers; routes and cluster info encoded once.
struct Answers {
    route: Bytes,
    cluster: Bytes,
    runtime_info: Bytes,
    queues: Queues,
}

impl Answers {
    fn new(addr: &str, queues: i32) -> Self {
        let broker = BrokerData {
            cluster: CLUSTER.into(),
            broker_name: BROKER.into(),
            broker_addrs: [(0, addr.to_string())].into(),
            ..Default::default()
        };
        let route = TopicRouteData {
            queue_datas: vec![QueueData {
                broker_name: BROKER.into(),
                read_queue_nums: queues,
                write_queue_nums: queues,
                perm: 6,
                topic_sys_flag: 0,
            }],
            broker_datas: vec![broker.clone()],
            ..TopicRouteData::default()
        };
        let cluster = ClusterInfo {
            broker_addr_table: [(BROKER.to_string(), broker)].into(),
            cluster_addr_table: [(CLUSTER.to_string(), [BROKER.to_string()].into())].into(),
        };
        let runtime_info = KvTable {
            table: [("brokerVersionDesc".to_string(), "ceiling".to_string())].into(),
        };
        Self {
            route: encode_json(&route).into(),
            cluster: encode_json(&cluster).into(),
            runtime_info: encode_json(&runtime_info).into(),
            queues: Queues::new(queues, addr.parse().unwrap_or(([127, 0, 0, 1], 0).into())),
        }
    }

    /// The answer to `request`; none to a oneway request or a response.
    fn answer(&self, request: &RemotingCommand) -> Option<Reply> {
        use request_code::*;
        if request.is_oneway() || request.is_response() {
            return None;
        }
        let ok = || RemotingCommand::response_to(request, response_code::SUCCESS, None);
        Some(Reply::Now(match request.code {
            SEND_MESSAGE | SEND_MESSAGE_V2 | SEND_BATCH_MESSAGE => self.stored(request),
            GET_ROUTEINFO_BY_TOPIC => ok().with_body(self.route.clone()),
            GET_BROKER_CLUSTER_INFO => ok().with_body(self.cluster.clone()),
            GET_BROKER_RUNTIME_INFO => ok().with_body(self.runtime_info.clone()),
            UPDATE_AND_CREATE_TOPIC | HEART_BEAT | UNREGISTER_CLIENT => ok(),
            GET_MAX_OFFSET => self.queues.max_offset(request),
            PULL_MESSAGE => match self.queues.pull(request, false) {
                Pulled::Answer(answer) => answer,
                Pulled::Hold(wait) => return Some(Reply::Hold(wait)),
            },
            _ => RemotingCommand::not_supported(request),
        }))
    }

    /// A send answered as a broker answers a stored one.
    fn stored(&self, request: &RemotingCommand) -> RemotingCommand {
        let fields = &request.ext_fields;
        // SEND_MESSAGE_V2 names the queue `e`.
        let queue = fields
            .get("e")
            .or_else(|| fields.get("queueId"))
            .unwrap_or("0");
        let queue_id = queue.trim().parse().unwrap_or(0);
        // A batch is answered as one message and not kept for pulls.
        let keep = request.code != request_code::SEND_BATCH_MESSAGE;
        let offset = self.queues.append(queue_id, request, keep);
        RemotingCommand::response_to(request, response_code::SUCCESS, None)
            .with_ext("msgId", MSG_ID)
            .with_ext("queueId", queue)
            .with_ext("queueOffset", offset)
    }
}

/// A ceiling started for one run (this binary's `ceiling` mode as a
/// child); killed and reaped when dropped.
pub struct Ceiling {
    child: Child,
    /// Its address, name server and broker both.
    pub addr: String,
}

impl Ceiling {
    /// Starts the ceiling with `queues` per route and `threads` threads and
    /// waits until it listens.
    pub fn start(queues: i32, threads: usize) -> Result<Self, BenchError> {
        let exe = std::env::current_exe().map_err(|e| BenchError::io("current_exe", e))?;
        let mut child = Command::new(exe)
            .args([
                "ceiling",
                "--queues",
                &queues.to_string(),
                "--threads",
                &threads.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| BenchError::io("ferrocket-bench ceiling", e))?;
        let mut line = String::new();
        if let Some(stdout) = child.stdout.take() {
            let _ = BufReader::new(stdout).read_line(&mut line);
        }
        let Some(addr) = line.trim().strip_prefix(LISTENING).map(str::to_string) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(BenchError::Setup(format!(
                "the ceiling did not start: {line:?}"
            )));
        };
        Ok(Self { child, addr })
    }

    /// The process whose CPU a run measures.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Ceiling {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocket_protocol::frame::SerializeType;

    fn answers() -> Answers {
        Answers::new("127.0.0.1:1", 4)
    }

    /// An answer given at once.
    fn now(answers: &Answers, request: &RemotingCommand) -> RemotingCommand {
        match answers.answer(request) {
            Some(Reply::Now(answer)) => answer,
            Some(Reply::Hold(_)) => panic!("held"),
            None => panic!("no answer"),
        }
    }

    #[test]
    fn a_send_is_answered_as_stored_on_the_queue_it_named() {
        let mut v2 = RemotingCommand::request(request_code::SEND_MESSAGE_V2).with_ext("e", 3);
        v2.opaque = 41;
        v2.serialize_type = SerializeType::Json;
        let a = answers();
        let first = now(&a, &v2);
        let second = now(&a, &v2);
        assert_eq!(
            (first.code, first.opaque, first.is_response()),
            (0, 41, true)
        );
        assert_eq!(first.ext_fields.get("queueId"), Some("3"));
        assert_eq!(first.ext_fields.get("queueOffset"), Some("0"));
        assert_eq!(second.ext_fields.get("queueOffset"), Some("1"));
        assert_eq!(first.serialize_type, SerializeType::Json);
    }

    #[test]
    fn oneway_sends_get_no_answer_and_unknown_codes_are_refused() {
        let mut oneway = RemotingCommand::request(request_code::SEND_MESSAGE);
        oneway.mark_oneway();
        assert!(answers().answer(&oneway).is_none());
        let other = now(
            &answers(),
            &RemotingCommand::request(request_code::QUERY_MESSAGE),
        );
        assert_eq!(other.code, response_code::REQUEST_CODE_NOT_SUPPORTED);
    }

    #[test]
    fn the_route_names_the_ceiling_itself() {
        let a = answers();
        let route = now(
            &a,
            &RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC),
        );
        let route: TopicRouteData =
            ferrocket_protocol::body::decode_json(&route.body).expect("route");
        assert_eq!(route.broker_datas[0].master_addr(), Some("127.0.0.1:1"));
        assert_eq!(route.queue_datas[0].write_queue_nums, 4);
    }

    /// A ceiling serving `queues` queues in this process: its address and
    /// answers.
    async fn start_in_process(queues: i32) -> (String, Arc<Answers>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let answers = Arc::new(Answers::new(&addr, queues));
        tokio::spawn(serve(listener, Arc::clone(&answers)));
        (addr, answers)
    }

    fn spec_of(addr: String) -> crate::target::TargetSpec {
        crate::target::TargetSpec {
            label: Some("ceiling".into()),
            namesrv: addr,
            broker_pids: vec![],
            broker_pid_children: false,
            broker_config: None,
            tls: false,
        }
    }

    /// A whole produce run against the ceiling, in this process: every
    /// send is answered, once.
    async fn produce_through(encoding: &str) {
        use clap::Parser;
        let (addr, answers) = start_in_process(4).await;
        let args = [
            "ferrocket-bench",
            "produce",
            "--warmup",
            "0",
            "--messages",
            "2000",
            "--size",
            "64",
            "--inflight",
            "16",
            "--queues",
            "4",
            "--header-encoding",
            encoding,
        ];
        let crate::args::Mode::Produce(single) =
            crate::args::Cli::try_parse_from(args).unwrap().mode
        else {
            unreachable!()
        };
        let spec = spec_of(addr);
        let w = &single.workload;
        let mut session = crate::window::Session::open(&spec, w, false, 1, true)
            .await
            .unwrap();
        assert_eq!(session.target.queues.len(), 4);
        session
            .produce(0, 30, std::time::Instant::now())
            .await
            .unwrap();
        let totals = &session.result.totals;
        assert!(totals.sent_msgs >= 2000, "sent {}", totals.sent_msgs);
        assert!(totals.errors.is_empty(), "{:?}", totals.errors);
        assert_eq!(answers.queues.appended() as u64, totals.sent_msgs);
    }

    /// An e2e run against the ceiling, in this process: long-polled pulls
    /// receive every message sent, with its e2e latency.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_e2e_run_against_the_ceiling_receives_what_it_sends() {
        use clap::Parser;
        let (addr, _answers) = start_in_process(2).await;
        let args = [
            "ferrocket-bench",
            "e2e",
            "--warmup",
            "0",
            "--duration",
            "1",
            "--size",
            "64",
            "--rate",
            "2000",
            "--queues",
            "2",
            "--suspend-ms",
            "200",
        ];
        let crate::args::Mode::E2e(single) = crate::args::Cli::try_parse_from(args).unwrap().mode
        else {
            unreachable!()
        };
        let spec = spec_of(addr);
        let mut session = crate::window::Session::open(&spec, &single.workload, true, 9, true)
            .await
            .unwrap();
        session.e2e(0, 1, std::time::Instant::now()).await.unwrap();
        let totals = &session.result.totals;
        assert!(totals.sent_msgs > 0);
        assert_eq!(totals.received_msgs, totals.sent_msgs);
        assert_eq!(totals.e2e_latency.len(), totals.received_msgs);
        assert!(totals.pulls > 0);
        assert!(totals.errors.is_empty(), "{:?}", totals.errors);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_produce_run_against_the_ceiling_gets_every_send_answered() {
        produce_through("json").await;
        produce_through("rocketmq").await;
    }
}
