//! Tests of whole runs against a fake name server + broker in one process:
//! just enough of the Remoting protocol (cluster info, routes, topic
//! creation, sends, batches, long-polled pulls, max offsets) for the
//! harness's modes to run end to end and for their counts to be checked
//! against what the fake stored.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use ferrocket_protocol::batch::decode_batch;
use ferrocket_protocol::body::{encode_json, BrokerData, ClusterInfo, QueueData, TopicRouteData};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{
    pull_sys_flag, CreateTopicRequestHeader, PullMessageRequestHeader, QueueRequestHeader,
    SendMessageRequestHeader, TopicRequestHeader,
};
use ferrocket_protocol::limits::FRAME_BYTES_MAX;
use ferrocket_protocol::record::NewRecord;
use ferrocket_protocol::{FrameDecoder, RemotingCommand};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const BROKER: &str = "fake-broker";
const CLUSTER: &str = "FakeCluster";

#[derive(Default)]
struct State {
    topics: HashMap<String, i32>,
    /// Encoded records per (topic, queue).
    queues: HashMap<(String, i32), Vec<Bytes>>,
    physical: i64,
}

/// A running fake; both name server and broker live at `addr`.
pub struct Fake {
    pub addr: String,
    state: Arc<Mutex<State>>,
}

impl Fake {
    pub async fn start() -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, addr, shared.clone()));
            }
        });
        Fake {
            addr: addr.to_string(),
            state,
        }
    }

    /// Messages stored in `topic`, all queues.
    pub fn stored(&self, topic: &str) -> usize {
        let state = self.state.lock().unwrap();
        state
            .queues
            .iter()
            .filter(|((t, _), _)| t == topic)
            .map(|(_, records)| records.len())
            .sum()
    }
}

async fn serve(stream: tokio::net::TcpStream, addr: SocketAddr, state: Arc<Mutex<State>>) {
    let (mut reader, mut writer) = stream.into_split();
    let (tx, mut rx) = mpsc::unbounded_channel::<RemotingCommand>();
    tokio::spawn(async move {
        while let Some(response) = rx.recv().await {
            let mut out = BytesMut::new();
            response.encode(&mut out);
            if writer.write_all(&out).await.is_err() {
                break;
            }
        }
    });
    let decoder = FrameDecoder::new(FRAME_BYTES_MAX);
    let mut buf = BytesMut::new();
    loop {
        while let Ok(Some(request)) = decoder.next_frame(&mut buf) {
            let tx = tx.clone();
            let state = state.clone();
            tokio::spawn(async move {
                let oneway = request.is_oneway();
                let response = handle(&request, addr, &state).await;
                if !oneway {
                    let _ = tx.send(response);
                }
            });
        }
        match reader.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

fn ok(request: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(request, response_code::SUCCESS, None)
}

async fn handle(
    request: &RemotingCommand,
    addr: SocketAddr,
    state: &Mutex<State>,
) -> RemotingCommand {
    match request.code {
        request_code::GET_BROKER_CLUSTER_INFO => cluster_info(request, addr),
        request_code::UPDATE_AND_CREATE_TOPIC => {
            let header = CreateTopicRequestHeader::from_ext(&request.ext_fields).unwrap();
            state
                .lock()
                .unwrap()
                .topics
                .insert(header.topic, header.write_queue_nums);
            ok(request)
        }
        request_code::GET_ROUTEINFO_BY_TOPIC => route(request, addr, state),
        request_code::SEND_MESSAGE | request_code::SEND_BATCH_MESSAGE => send(request, addr, state),
        request_code::GET_MAX_OFFSET => {
            let header = QueueRequestHeader::from_ext(&request.ext_fields).unwrap();
            let state = state.lock().unwrap();
            let len = state
                .queues
                .get(&(header.topic, header.queue_id))
                .map_or(0, Vec::len);
            ok(request).with_ext("offset", len)
        }
        request_code::PULL_MESSAGE => pull(request, state).await,
        _ => RemotingCommand::not_supported(request),
    }
}

/// The one broker, a master at `addr`.
fn broker_data(addr: SocketAddr) -> BrokerData {
    BrokerData {
        cluster: CLUSTER.into(),
        broker_name: BROKER.into(),
        broker_addrs: BTreeMap::from([(0, addr.to_string())]),
    }
}

fn cluster_info(request: &RemotingCommand, addr: SocketAddr) -> RemotingCommand {
    let info = ClusterInfo {
        broker_addr_table: BTreeMap::from([(BROKER.to_string(), broker_data(addr))]),
        cluster_addr_table: BTreeMap::from([(
            CLUSTER.to_string(),
            BTreeSet::from([BROKER.to_string()]),
        )]),
    };
    ok(request).with_body(encode_json(&info))
}

fn route(request: &RemotingCommand, addr: SocketAddr, state: &Mutex<State>) -> RemotingCommand {
    let header = TopicRequestHeader::from_ext(&request.ext_fields).unwrap();
    let Some(&queues) = state.lock().unwrap().topics.get(&header.topic) else {
        return RemotingCommand::response_to(request, response_code::TOPIC_NOT_EXIST, None);
    };
    let route = TopicRouteData {
        queue_datas: vec![QueueData {
            broker_name: BROKER.into(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm: 6,
            topic_sys_flag: 0,
        }],
        broker_datas: vec![broker_data(addr)],
        ..TopicRouteData::default()
    };
    ok(request).with_body(encode_json(&route))
}

/// Stores the message (or each of a batch) as a record.
fn send(request: &RemotingCommand, addr: SocketAddr, state: &Mutex<State>) -> RemotingCommand {
    let header = SendMessageRequestHeader::from_ext(&request.ext_fields).unwrap();
    let bodies: Vec<Bytes> = if request.code == request_code::SEND_BATCH_MESSAGE {
        decode_batch(&request.body)
            .unwrap()
            .into_iter()
            .map(|i| i.body)
            .collect()
    } else {
        vec![request.body.clone()]
    };
    let queue_id = header.queue_id.unwrap_or(0);
    let mut state = state.lock().unwrap();
    let mut physical = state.physical;
    let records = state
        .queues
        .entry((header.topic.clone(), queue_id))
        .or_default();
    let first = records.len() as i64;
    for body in bodies {
        let mut out = BytesMut::new();
        let record = NewRecord {
            topic: &header.topic,
            queue_id,
            flag: 0,
            sys_flag: 0,
            born_timestamp_ms: 0,
            born_host: addr,
            store_timestamp_ms: 0,
            store_host: addr,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: &body,
            properties: b"",
        };
        physical += record
            .encode(records.len() as i64, physical, &mut out)
            .unwrap() as i64;
        records.push(out.freeze());
    }
    state.physical = physical;
    ok(request)
        .with_ext("msgId", "00")
        .with_ext("queueId", queue_id)
        .with_ext("queueOffset", first)
}

async fn pull(request: &RemotingCommand, state: &Mutex<State>) -> RemotingCommand {
    let header = PullMessageRequestHeader::from_ext(&request.ext_fields).unwrap();
    let suspend = header.sys_flag & pull_sys_flag::SUSPEND != 0;
    let deadline =
        Instant::now() + Duration::from_millis(header.suspend_timeout_millis.unwrap_or(0) as u64);
    let key = (header.topic.clone(), header.queue_id);
    loop {
        {
            let state = state.lock().unwrap();
            let records = state.queues.get(&key).map_or(&[][..], Vec::as_slice);
            let from = usize::try_from(header.queue_offset)
                .unwrap_or(0)
                .min(records.len());
            let to = records.len().min(from + header.max_msg_nums as usize);
            if to > from || !suspend || Instant::now() >= deadline {
                let code = if to > from {
                    response_code::SUCCESS
                } else {
                    response_code::PULL_NOT_FOUND
                };
                let mut body = BytesMut::new();
                for record in &records[from..to] {
                    body.extend_from_slice(record);
                }
                return RemotingCommand::response_to(request, code, None)
                    .with_ext("nextBeginOffset", to)
                    .with_ext("minOffset", 0)
                    .with_ext("maxOffset", records.len())
                    .with_ext("suggestWhichBrokerId", 0)
                    .with_body(body.freeze());
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Cli, Mode, WorkloadArgs};
    use crate::message::SendMode;
    use crate::target::TargetSpec;
    use crate::window::Session;
    use clap::Parser;

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

    fn spec(fake: &Fake) -> TargetSpec {
        TargetSpec {
            label: "fake".into(),
            namesrv: fake.addr.clone(),
            broker_pids: vec![std::process::id()],
            broker_pid_children: false,
            broker_config: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn produce_counts_match_what_the_broker_stored() {
        let fake = Fake::start().await;
        let w = workload(&["--messages", "500", "--queues", "4", "--inflight", "8"]);
        let mut session = Session::open(&spec(&fake), &w, false, 1, true)
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
        let fake = Fake::start().await;
        let w = workload(&["--driver", "client", "--messages", "300", "--inflight", "4"]);
        let mut session = Session::open(&spec(&fake), &w, false, 1, true)
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
        let fake = Fake::start().await;
        let w = workload(&[
            "--send-mode",
            "oneway",
            "--messages",
            "1000",
            "--inflight",
            "16",
        ]);
        let mut session = Session::open(&spec(&fake), &w, false, 1, true)
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
        let fake = Fake::start().await;
        let w = workload(&["--send-mode", "batch", "--batch", "10", "--messages", "200"]);
        assert_eq!(w.send_mode, SendMode::Batch);
        let mut session = Session::open(&spec(&fake), &w, false, 1, true)
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
        let fake = Fake::start().await;
        let w = workload(&["--rate", "2000", "--queues", "2", "--suspend-ms", "200"]);
        let mut session = Session::open(&spec(&fake), &w, true, 77, true)
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
    async fn consume_drains_exactly_the_preload() {
        let fake = Fake::start().await;
        let w = workload(&["--queues", "3", "--pull-batch", "7"]);
        let mut session = Session::open(&spec(&fake), &w, true, 5, true)
            .await
            .unwrap();
        session.drain(300, 30, Instant::now()).await.unwrap();
        let totals = &session.result.totals;
        assert_eq!(totals.sent_msgs, 0, "preload is not measured");
        assert_eq!(fake.stored("BenchTopic"), 300);
        assert_eq!(totals.received_msgs, 300);
        assert_eq!(totals.received_bytes, 300 * 64);
        assert_eq!(totals.pull_latency.len(), totals.pulls);
        assert!(totals.pulls >= 300 / 7);
        assert!(totals.errors.is_empty(), "{:?}", totals.errors);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_target_without_brokers_is_a_setup_error() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        // A name server that answers cluster info with no broker.
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = state.clone();
                tokio::spawn(async move {
                    let (mut r, mut w) = stream.into_split();
                    let decoder = FrameDecoder::new(FRAME_BYTES_MAX);
                    let mut buf = BytesMut::new();
                    loop {
                        while let Ok(Some(req)) = decoder.next_frame(&mut buf) {
                            let mut out = BytesMut::new();
                            ok(&req)
                                .with_body(encode_json(&ClusterInfo::default()))
                                .encode(&mut out);
                            let _ = w.write_all(&out).await;
                        }
                        if matches!(r.read_buf(&mut buf).await, Ok(0) | Err(_)) {
                            drop(state);
                            return;
                        }
                    }
                });
            }
        });
        let fake = Fake {
            addr: addr.to_string(),
            state: Arc::new(Mutex::new(State::default())),
        };
        let error = Session::open(&spec(&fake), &workload(&[]), false, 1, true)
            .await
            .err()
            .unwrap();
        assert!(error.to_string().contains("no master broker"), "{error}");
    }
}
