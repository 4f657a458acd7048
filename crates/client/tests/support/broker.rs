//! An in-memory fake broker and name server for producer/consumer tests.
//! Stores sent messages as real CommitLog records and serves them back in
//! pull bodies, so a round trip goes through the protocol's record codec.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use ferrocket_protocol::batch::decode_batch;
use ferrocket_protocol::body::{decode_json, HeartbeatData};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{
    PullMessageRequestHeader, QueryConsumerOffsetRequestHeader, QueueRequestHeader,
    SendMessageRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use ferrocket_protocol::message_id::offset_msg_id;
use ferrocket_protocol::record::NewRecord;
use ferrocket_protocol::RemotingCommand;

use super::{ok_with_body, serve, FakeServer};

pub const STORE_HOST: &str = "127.0.0.1:10911";

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
}

impl BrokerState {
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

    fn pull(&mut self, request: &RemotingCommand) -> RemotingCommand {
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

    fn handle(&mut self, request: RemotingCommand) -> Option<RemotingCommand> {
        self.requests.push(request.clone());
        let response = match request.code {
            request_code::SEND_MESSAGE
            | request_code::SEND_MESSAGE_V2
            | request_code::SEND_BATCH_MESSAGE => self.send(&request),
            request_code::PULL_MESSAGE => self.pull(&request),
            request_code::QUERY_CONSUMER_OFFSET => {
                let h = QueryConsumerOffsetRequestHeader::from_ext(&request.ext_fields).unwrap();
                match self
                    .consumer_offsets
                    .get(&(h.consumer_group, h.topic, h.queue_id))
                {
                    Some(offset) => {
                        RemotingCommand::response_to(&request, 0, None).with_ext("offset", offset)
                    }
                    None => {
                        RemotingCommand::response_to(&request, response_code::QUERY_NOT_FOUND, None)
                    }
                }
            }
            request_code::UPDATE_CONSUMER_OFFSET => {
                let h = UpdateConsumerOffsetRequestHeader::from_ext(&request.ext_fields).unwrap();
                self.consumer_offsets
                    .insert((h.consumer_group, h.topic, h.queue_id), h.commit_offset);
                RemotingCommand::response_to(&request, 0, None)
            }
            request_code::GET_MAX_OFFSET | request_code::GET_MIN_OFFSET => {
                let h = QueueRequestHeader::from_ext(&request.ext_fields).unwrap();
                let len = self.queues.get(&(h.topic, h.queue_id)).map_or(0, Vec::len);
                let offset = if request.code == request_code::GET_MAX_OFFSET {
                    len
                } else {
                    0
                };
                RemotingCommand::response_to(&request, 0, None).with_ext("offset", offset)
            }
            request_code::HEART_BEAT => {
                self.heartbeats.push(decode_json(&request.body).unwrap());
                RemotingCommand::response_to(&request, 0, None)
            }
            _ => RemotingCommand::not_supported(&request),
        };
        (!request.is_oneway()).then_some(response)
    }
}

pub struct Cluster {
    pub broker: FakeServer,
    pub namesrv: FakeServer,
    pub state: Arc<Mutex<BrokerState>>,
}

/// A broker "broker-a" and a name server that routes `topics` (name, write
/// queue count) and TBW102 (8 queues) to it.
pub async fn start(topics: &[(&str, i32)]) -> Cluster {
    let state = Arc::new(Mutex::new(BrokerState::default()));
    let broker = serve({
        let state = state.clone();
        Arc::new(move |request| state.lock().unwrap().handle(request))
    })
    .await;
    let mut routes: HashMap<String, i32> =
        topics.iter().map(|(t, n)| (t.to_string(), *n)).collect();
    routes.insert("TBW102".into(), 8);
    let broker_addr = broker.addr.clone();
    let namesrv = serve(Arc::new(move |request: RemotingCommand| {
        let topic = request.ext_fields.get("topic").unwrap_or("").to_string();
        Some(match (request.code, routes.get(&topic)) {
            (request_code::GET_ROUTEINFO_BY_TOPIC, Some(queues)) => ok_with_body(
                &request,
                format!(
                    r#"{{"queueDatas":[{{"brokerName":"broker-a","readQueueNums":{queues},"writeQueueNums":{queues},"perm":6}}],
                        "brokerDatas":[{{"cluster":"c","brokerName":"broker-a","brokerAddrs":{{"0":"{broker_addr}"}}}}]}}"#
                ),
            ),
            (request_code::GET_ROUTEINFO_BY_TOPIC, None) => {
                RemotingCommand::response_to(&request, response_code::TOPIC_NOT_EXIST, None)
            }
            _ => RemotingCommand::not_supported(&request),
        })
    }))
    .await;
    Cluster {
        broker,
        namesrv,
        state,
    }
}
