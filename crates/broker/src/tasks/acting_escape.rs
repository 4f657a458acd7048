//! What an acting master delivers, and where (Java's `EscapeBridge` with
//! `enableRemoteEscape=true`): a slave never writes its own CommitLog (it
//! must stay a byte copy of its master's), so the delay-level and timer
//! messages that come due while it acts are sent to the master of another
//! broker set that serves their topic, and so are its open half messages
//! (that set then checks them back with their producers). Without `enableRemoteEscape`, or with no such
//! set, they wait, as Java's do, and are delivered by whoever runs the
//! scheduler next.

use std::rc::Rc;

use ferrocket_protocol::body::{decode_json, perm, TopicRouteData};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{SendMessageRequestHeader, TopicRequestHeader};
use ferrocket_protocol::properties;
use ferrocket_protocol::record::{decode_record, sys_flag, RecordView};
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::delivery::{real_topic_copy, DeliverError, Parked};
use crate::shard::Shard;

/// Longest one escaped send may take (Java's `SEND_TIMEOUT`, 3 s).
const ESCAPE_SEND_TIMEOUT_MS: u64 = 3_000;

/// Longest silence between two WARNs about escapes that fail (each level
/// tries again every 100 ms while nothing takes its messages).
const ESCAPE_WARN_INTERVAL_MS: i64 = 10_000;

thread_local! {
    /// This shard's last WARN about a failed escape, and those not logged
    /// since.
    static LAST_WARN: std::cell::Cell<(i64, u64)> = const { std::cell::Cell::new((i64::MIN, 0)) };
}

/// Logs a failed escape, at most once per [`ESCAPE_WARN_INTERVAL_MS`] per
/// shard, with how many failed unlogged since.
pub(crate) fn report_failure(level: i32, offset: i64, reject: &Reject) {
    let now = now_ms();
    LAST_WARN.with(|last| {
        let (at, quiet) = last.get();
        if now.saturating_sub(at) < ESCAPE_WARN_INTERVAL_MS {
            last.set((at, quiet.saturating_add(1)));
            return;
        }
        last.set((now, 0));
        tracing::warn!(level, offset, remark = %reject.remark, more_failures = quiet,
            "an acting master could not hand a due message to another set; retrying");
    });
}

/// Sends a due delay-level or timer message to another set's master.
pub(crate) async fn escape(
    shard: &Shard,
    source: &RecordView<'_>,
    parked: Parked,
) -> Result<(), DeliverError> {
    let copy = real_topic_copy(source, now_ms(), parked)?;
    let record = decode_record(&copy.record, false)
        .map_err(|e| DeliverError::Invalid(format!("re-encoded message undecodable: {e}")))?;
    let header = SendMessageRequestHeader {
        producer_group: inner_producer_group(shard),
        topic: copy.topic.clone(),
        queue_id: Some(copy.queue_id),
        sys_flag: Some(record.sys_flag),
        born_timestamp: Some(record.born_timestamp_ms),
        flag: Some(record.flag),
        properties: Some(String::from_utf8_lossy(record.properties).into_owned()),
        reconsume_times: Some(record.reconsume_times),
        ..SendMessageRequestHeader::default()
    };
    let send = EscapeSend {
        header,
        body: bytes::Bytes::copy_from_slice(record.body),
    };
    match shard.call(0, send).await {
        Ok(result) => result.map_err(DeliverError::Store),
        Err(reject) => Err(DeliverError::Store(reject)),
    }
}

/// Sends an open half message to another set's master as a half message
/// of its real topic (Java's `buildTransactionalMessageFromHalfMessage`
/// and `putMessageToRemoteBroker`): that set checks it back with the
/// producer group and takes the producer's END_TRANSACTION.
pub(crate) async fn escape_half(shard: &Shard, held: &RecordView<'_>) -> Result<(), Reject> {
    let mut props = held.properties();
    let topic = props
        .get(properties::REAL_TOPIC)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Reject::system("half message without REAL_TOPIC"))?
        .to_string();
    let queue_id = props
        .get(properties::REAL_QID)
        .and_then(|q| q.trim().parse::<i32>().ok())
        .unwrap_or(0);
    props.insert(properties::TRAN_MSG, "true");
    props.remove(properties::TRAN_PREPARED_QUEUE_OFFSET);
    props.remove(properties::REAL_QID);
    let producer_group = match props.get(properties::PGROUP) {
        Some(group) if !group.is_empty() => group.to_string(),
        _ => inner_producer_group(shard),
    };
    let header = SendMessageRequestHeader {
        producer_group,
        topic,
        queue_id: Some(queue_id),
        sys_flag: Some(held.sys_flag | sys_flag::TRANSACTION_PREPARED),
        born_timestamp: Some(held.born_timestamp_ms),
        flag: Some(held.flag),
        properties: Some(props.to_encoded_string()),
        reconsume_times: Some(held.reconsume_times),
        ..SendMessageRequestHeader::default()
    };
    let send = EscapeSend {
        header,
        body: bytes::Bytes::copy_from_slice(held.body),
    };
    shard.call(0, send).await?
}

/// Java's inner producer group, `InnerProducerGroup_<name>_<id>`.
fn inner_producer_group(shard: &Shard) -> String {
    let config = shard.config();
    format!(
        "InnerProducerGroup_{}_{}",
        config.broker_name, config.broker_id
    )
}

/// To shard 0 (the one with outbound connections): find a writable queue
/// of the topic on another set and send there.
struct EscapeSend {
    header: SendMessageRequestHeader,
    body: bytes::Bytes,
}

impl ShardCall<Shard> for EscapeSend {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let mut header = self.header;
        let route = topic_route(&shard, &header.topic).await?;
        let own = &shard.config().broker_name;
        let (broker_name, addr, queue_id) =
            remote_target(&route, own, header.queue_id.unwrap_or(0)).ok_or_else(|| {
                Reject::new(
                    response_code::SERVICE_NOT_AVAILABLE,
                    format!("no other broker set takes writes for {}", header.topic),
                )
            })?;
        header.queue_id = Some(queue_id);
        header.broker_name = Some(broker_name);
        let mut request = RemotingCommand::request(request_code::SEND_MESSAGE).with_body(self.body);
        request.ext_fields = header.to_ext();
        let answer = call(&shard, &addr, request, ESCAPE_SEND_TIMEOUT_MS).await?;
        if answer.code != response_code::SUCCESS {
            return Err(Reject::new(
                answer.code,
                format!(
                    "{addr} refused the escaped message: {}",
                    answer.remark.unwrap_or_default()
                ),
            ));
        }
        tracing::debug!(topic = %header.topic, %addr, "delivered a due message to another set");
        Ok(())
    }
}

/// The first writable set other than `own` with a master, sorted by name,
/// and the queue: the message's own modulo that set's write queues.
fn remote_target(
    route: &TopicRouteData,
    own: &str,
    queue_id: i32,
) -> Option<(String, String, i32)> {
    let mut queues: Vec<_> = route
        .queue_datas
        .iter()
        .filter(|q| q.broker_name != own && perm::is_writeable(q.perm) && q.write_queue_nums > 0)
        .collect();
    queues.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    queues.into_iter().find_map(|q| {
        let broker = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == q.broker_name)?;
        let addr = broker.master_addr()?.to_string();
        Some((
            q.broker_name.clone(),
            addr,
            queue_id.rem_euclid(q.write_queue_nums),
        ))
    })
}

/// GET_ROUTEINFO_BY_TOPIC from the first name server that knows the topic.
async fn topic_route(shard: &Shard, topic: &str) -> Result<TopicRouteData, Reject> {
    let header = TopicRequestHeader {
        topic: topic.to_string(),
        cluster_name: None,
    };
    let mut request = RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC);
    request.ext_fields = header.to_ext();
    let timeout_ms = shard.config().register_broker_timeout_ms;
    for addr in &shard.env().namesrvs {
        let answer = call(shard, &addr.to_string(), request.clone(), timeout_ms).await;
        let Ok(answer) = answer else { continue };
        if answer.code != response_code::SUCCESS {
            continue;
        }
        if let Ok(route) = decode_json::<TopicRouteData>(&answer.body) {
            return Ok(route);
        }
    }
    Err(Reject::new(
        response_code::SERVICE_NOT_AVAILABLE,
        format!("no name server has a route for {topic}"),
    ))
}

async fn call(
    shard: &Shard,
    addr: &str,
    request: RemotingCommand,
    timeout_ms: u64,
) -> Result<RemotingCommand, Reject> {
    let target = crate::config::parse_host_port(addr, "escape target")
        .map_err(|e| Reject::system(e.to_string()))?;
    let control = shard.control()?;
    (control.namesrv.call(target, request, timeout_ms).await)
        .map_err(|e| Reject::new(response_code::SERVICE_NOT_AVAILABLE, format!("{addr}: {e}")))
}
