//! An in-memory fake broker and name server. Stores sent messages as real
//! CommitLog records and serves them back in pull bodies, so a round trip
//! goes through the protocol's record codec; the name server routes the
//! topics it was started with, the template topic and those created on the
//! broker.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use ferrocket_protocol::batch::decode_batch;
use ferrocket_protocol::body::{
    decode_json, encode_json, BrokerData, ClusterInfo, HeartbeatData, QueueData, TopicRouteData,
};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{
    pull_sys_flag, CreateTopicRequestHeader, PullMessageRequestHeader,
    QueryConsumerOffsetRequestHeader, QueueRequestHeader, SendMessageRequestHeader,
    UpdateConsumerOffsetRequestHeader,
};
use ferrocket_protocol::message_id::offset_msg_id;
use ferrocket_protocol::record::NewRecord;
use ferrocket_protocol::RemotingCommand;

use crate::server::{ok_with_body, serve, serve_replies, FakeServer, Reply};

pub const STORE_HOST: &str = "127.0.0.1:10911";
/// The one broker's name (a master).
pub const BROKER_NAME: &str = "broker-a";
const CLUSTER_NAME: &str = "c";
/// The template topic of auto-creation, routed with 8 queues.
const TEMPLATE_TOPIC: &str = "TBW102";
/// How often a held pull looks for new messages.
const LONG_POLL_STEP_MS: u64 = 2;

#[derive(Default)]
pub struct BrokerState {
    /// (topic, queue id) -> encoded records, by queue offset.
    pub queues: HashMap<(String, i32), Vec<Bytes>>,
    pub commit_log_bytes: i64,
    pub consumer_offsets: HashMap<(String, String, i32), i64>,
    /// Every request received, in order.
    pub requests: Vec<RemotingCommand>,
    pub heartbeats: Vec<HeartbeatData>,
    /// When set, every send is answered with this code.
    pub fail_sends_with: Option<i32>,
    /// Topics the name server routes, with their queue count.
    pub topics: HashMap<String, i32>,
    /// When set, a pull with the suspend flag that finds nothing is held
    /// until a message arrives or its suspend time ends, as a broker's long
    /// polling does; otherwise it is answered PULL_NOT_FOUND at once.
    pub long_poll: bool,
}

impl BrokerState {
    /// Messages stored in `topic`, all queues.
    pub fn stored(&self, topic: &str) -> usize {
        self.queues
            .iter()
            .filter(|((t, _), _)| t == topic)
            .map(|(_, records)| records.len())
            .sum()
    }

    fn max_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.queues
            .get(&(topic.to_string(), queue_id))
            .map_or(0, Vec::len) as i64
    }

    fn store(
        &mut self,
        header: &SendMessageRequestHeader,
        flag: i32,
        body: &[u8],
        props: &[u8],
    ) -> (String, i64) {
        let queue_id = header.queue_id.unwrap_or(0);
        let key = (header.topic.clone(), queue_id);
        let queue_offset = self.queues.get(&key).map_or(0, Vec::len) as i64;
        let store_host: SocketAddr = STORE_HOST.parse().unwrap();
        let record = NewRecord {
            topic: &header.topic,
            queue_id,
            flag,
            sys_flag: header.sys_flag.unwrap_or(0),
            born_timestamp_ms: header.born_timestamp.unwrap_or(0),
            born_host: "127.0.0.1:40000".parse().unwrap(),
            store_timestamp_ms: 1_700_000_000_000,
            store_host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body,
            properties: props,
        };
        let physical = self.commit_log_bytes;
        let mut out = BytesMut::new();
        let len = record.encode(queue_offset, physical, &mut out).unwrap();
        self.commit_log_bytes += len as i64;
        self.queues.entry(key).or_default().push(out.freeze());
        (offset_msg_id(store_host, physical), queue_offset)
    }

    fn send(&mut self, request: &RemotingCommand) -> RemotingCommand {
        if let Some(code) = self.fail_sends_with {
            return RemotingCommand::response_to(request, code, Some("refused by test".into()));
        }
        let header = SendMessageRequestHeader::from_ext(&request.ext_fields).unwrap();
        let (ids, first_offset) = if request.code == request_code::SEND_BATCH_MESSAGE {
            let mut ids = Vec::new();
            let mut first = None;
            for item in decode_batch(&request.body).unwrap() {
                let (id, offset) = self.store(&header, item.flag, &item.body, &item.properties);
                ids.push(id);
                first.get_or_insert(offset);
            }
            (ids.join(","), first.unwrap())
        } else {
            let props = header.properties.clone().unwrap_or_default();
            self.store(
                &header,
                header.flag.unwrap_or(0),
                &request.body,
                props.as_bytes(),
            )
        };
        RemotingCommand::response_to(request, 0, None)
            .with_ext("msgId", ids)
            .with_ext("queueId", header.queue_id.unwrap_or(0))
            .with_ext("queueOffset", first_offset)
    }

    fn pull(&self, request: &RemotingCommand) -> RemotingCommand {
        let header = PullMessageRequestHeader::from_ext(&request.ext_fields).unwrap();
        let records = self
            .queues
            .get(&(header.topic.clone(), header.queue_id))
            .cloned()
            .unwrap_or_default();
        let max = records.len() as i64;
        let offset = header.queue_offset;
        let (code, next, body) = if offset > max || offset < 0 {
            (response_code::PULL_OFFSET_MOVED, max, Bytes::new())
        } else if offset == max {
            (response_code::PULL_NOT_FOUND, max, Bytes::new())
        } else {
            let end = (offset + i64::from(header.max_msg_nums)).min(max);
            let mut body = BytesMut::new();
            for record in &records[offset as usize..end as usize] {
                body.extend_from_slice(record);
            }
            (response_code::SUCCESS, end, body.freeze())
        };
        RemotingCommand::response_to(request, code, None)
            .with_ext("suggestWhichBrokerId", 0)
            .with_ext("nextBeginOffset", next)
            .with_ext("minOffset", 0)
            .with_ext("maxOffset", max)
            .with_body(body)
    }

    /// Whether `request` is a pull to hold: long polling, suspend flag set,
    /// nothing to read yet.
    fn holds(&self, request: &RemotingCommand) -> bool {
        if !self.long_poll || request.code != request_code::PULL_MESSAGE {
            return false;
        }
        let header = PullMessageRequestHeader::from_ext(&request.ext_fields).unwrap();
        header.sys_flag & pull_sys_flag::SUSPEND != 0
            && header.queue_offset == self.max_offset(&header.topic, header.queue_id)
    }

    fn query_offset(&self, request: &RemotingCommand) -> RemotingCommand {
        let h = QueryConsumerOffsetRequestHeader::from_ext(&request.ext_fields).unwrap();
        match self
            .consumer_offsets
            .get(&(h.consumer_group, h.topic, h.queue_id))
        {
            Some(offset) => {
                RemotingCommand::response_to(request, 0, None).with_ext("offset", offset)
            }
            None => RemotingCommand::response_to(request, response_code::QUERY_NOT_FOUND, None),
        }
    }

    fn update_offset(&mut self, request: &RemotingCommand) -> RemotingCommand {
        let h = UpdateConsumerOffsetRequestHeader::from_ext(&request.ext_fields).unwrap();
        self.consumer_offsets
            .insert((h.consumer_group, h.topic, h.queue_id), h.commit_offset);
        RemotingCommand::response_to(request, 0, None)
    }

    fn queue_offset(&self, request: &RemotingCommand) -> RemotingCommand {
        let h = QueueRequestHeader::from_ext(&request.ext_fields).unwrap();
        let offset = if request.code == request_code::GET_MAX_OFFSET {
            self.max_offset(&h.topic, h.queue_id)
        } else {
            0
        };
        RemotingCommand::response_to(request, 0, None).with_ext("offset", offset)
    }

    fn create_topic(&mut self, request: &RemotingCommand) -> RemotingCommand {
        let header = CreateTopicRequestHeader::from_ext(&request.ext_fields).unwrap();
        self.topics.insert(header.topic, header.write_queue_nums);
        RemotingCommand::response_to(request, 0, None)
    }

    fn handle(&mut self, request: RemotingCommand) -> Option<RemotingCommand> {
        self.requests.push(request.clone());
        let response = match request.code {
            request_code::SEND_MESSAGE
            | request_code::SEND_MESSAGE_V2
            | request_code::SEND_BATCH_MESSAGE => self.send(&request),
            request_code::PULL_MESSAGE => self.pull(&request),
            request_code::QUERY_CONSUMER_OFFSET => self.query_offset(&request),
            request_code::UPDATE_CONSUMER_OFFSET => self.update_offset(&request),
            request_code::GET_MAX_OFFSET | request_code::GET_MIN_OFFSET => {
                self.queue_offset(&request)
            }
            request_code::HEART_BEAT => {
                self.heartbeats.push(decode_json(&request.body).unwrap());
                RemotingCommand::response_to(&request, 0, None)
            }
            request_code::UPDATE_AND_CREATE_TOPIC => self.create_topic(&request),
            _ => RemotingCommand::not_supported(&request),
        };
        (!request.is_oneway()).then_some(response)
    }
}

/// The broker's answer to `request`: a pull it holds is answered later.
fn broker_reply(state: &Arc<Mutex<BrokerState>>, request: RemotingCommand) -> Reply {
    let mut guard = state.lock().unwrap();
    if guard.holds(&request) {
        guard.requests.push(request.clone());
        return Reply::Later(Box::pin(held_pull(state.clone(), request)));
    }
    match guard.handle(request) {
        Some(response) => Reply::Now(response),
        None => Reply::Silence,
    }
}

/// Answers a held pull once its queue has a message or its suspend time
/// has passed.
async fn held_pull(state: Arc<Mutex<BrokerState>>, request: RemotingCommand) -> RemotingCommand {
    let header = PullMessageRequestHeader::from_ext(&request.ext_fields).unwrap();
    let suspend_ms = header.suspend_timeout_millis.unwrap_or(0) as u64;
    let deadline = Instant::now() + Duration::from_millis(suspend_ms);
    loop {
        tokio::time::sleep(Duration::from_millis(LONG_POLL_STEP_MS)).await;
        let state = state.lock().unwrap();
        let max = state.max_offset(&header.topic, header.queue_id);
        if max > header.queue_offset || Instant::now() >= deadline {
            return state.pull(&request);
        }
    }
}

/// The name server's answer: routes and cluster info, all on one broker.
fn namesrv_reply(
    state: &BrokerState,
    broker_addr: &str,
    request: &RemotingCommand,
) -> RemotingCommand {
    let broker = BrokerData {
        cluster: CLUSTER_NAME.into(),
        broker_name: BROKER_NAME.into(),
        broker_addrs: BTreeMap::from([(0, broker_addr.to_string())]),
        ..Default::default()
    };
    match request.code {
        request_code::GET_ROUTEINFO_BY_TOPIC => {
            let topic = request.ext_fields.get("topic").unwrap_or("");
            let Some(&queues) = state.topics.get(topic) else {
                return RemotingCommand::response_to(request, response_code::TOPIC_NOT_EXIST, None);
            };
            let route = TopicRouteData {
                queue_datas: vec![QueueData {
                    broker_name: BROKER_NAME.into(),
                    read_queue_nums: queues,
                    write_queue_nums: queues,
                    perm: 6,
                    topic_sys_flag: 0,
                }],
                broker_datas: vec![broker],
                ..TopicRouteData::default()
            };
            ok_with_body(request, encode_json(&route))
        }
        request_code::GET_BROKER_CLUSTER_INFO => {
            let info = ClusterInfo {
                broker_addr_table: BTreeMap::from([(BROKER_NAME.to_string(), broker)]),
                cluster_addr_table: BTreeMap::from([(
                    CLUSTER_NAME.to_string(),
                    BTreeSet::from([BROKER_NAME.to_string()]),
                )]),
            };
            ok_with_body(request, encode_json(&info))
        }
        _ => RemotingCommand::not_supported(request),
    }
}

pub struct Cluster {
    pub broker: FakeServer,
    pub namesrv: FakeServer,
    pub state: Arc<Mutex<BrokerState>>,
}

impl Cluster {
    /// Messages stored in `topic`, all queues.
    pub fn stored(&self, topic: &str) -> usize {
        self.state.lock().unwrap().stored(topic)
    }
}

/// A broker "broker-a" and a name server that routes `topics` (name, write
/// queue count), TBW102 (8 queues) and topics created on the broker to it.
pub async fn start(topics: &[(&str, i32)]) -> Cluster {
    let mut routes: HashMap<String, i32> =
        topics.iter().map(|(t, n)| (t.to_string(), *n)).collect();
    routes.insert(TEMPLATE_TOPIC.into(), 8);
    let state = Arc::new(Mutex::new(BrokerState {
        topics: routes,
        ..BrokerState::default()
    }));
    let broker = serve_replies({
        let state = state.clone();
        Arc::new(move |request| broker_reply(&state, request))
    })
    .await;
    let broker_addr = broker.addr.clone();
    let namesrv = serve({
        let state = state.clone();
        Arc::new(move |request: RemotingCommand| {
            Some(namesrv_reply(
                &state.lock().unwrap(),
                &broker_addr,
                &request,
            ))
        })
    })
    .await;
    Cluster {
        broker,
        namesrv,
        state,
    }
}
