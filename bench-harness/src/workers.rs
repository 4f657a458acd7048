//! Producer and consumer tasks.
//!
//! Producers: `inflight` tasks per connection, each sending one request at a
//! time, so a connection carries up to `inflight` pipelined requests. With
//! a pacer, a task takes the next due request and measures from its
//! intended time; without, it sends as soon as its previous one returned.
//!
//! Consumers: one task per queue, pulling from an explicit offset with the
//! subscription in the request, long-polling when the queue is empty.

mod pop;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrocket_client::{ClientError, Connection, MessageQueue};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::OffsetResponseHeader;
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;
use tokio::task::JoinHandle;

use crate::control::Control;
use crate::error::BenchError;
use crate::message::{
    max_offset_request, ns_since_anchor, pull_request, read_stamp, SendFactory, SendMode,
};
use crate::pacing::Pacer;
use crate::recorder::{ErrorKind, Recorder, Shard};

/// Pause after a failed pull before the next try.
pub(crate) const PULL_ERROR_BACKOFF_MS: u64 = 20;

fn elapsed_ns(since: Instant) -> u64 {
    Instant::now().saturating_duration_since(since).as_nanos() as u64
}

/// Everything producer tasks share.
#[derive(Debug, Clone)]
pub struct ProducerPlan {
    pub factory: Arc<SendFactory>,
    pub mode: SendMode,
    pub inflight: usize,
    pub timeout: Duration,
    pub pacer: Option<Arc<Pacer>>,
}

/// Starts `plan.inflight` tasks on each connection; each connection gets
/// its own shard. `queues` maps a broker name to its queue ids.
pub fn spawn_producers(
    connections: &[(String, Connection)],
    queues: &BTreeMap<String, Vec<i32>>,
    plan: &ProducerPlan,
    control: &Arc<Control>,
    recorder: &Recorder,
) -> Vec<JoinHandle<()>> {
    let mut tasks = Vec::new();
    for (index, (broker, connection)) in connections.iter().enumerate() {
        let Some(queue_ids) = queues.get(broker).filter(|q| !q.is_empty()) else {
            continue;
        };
        let queue_ids = Arc::new(queue_ids.clone());
        let shard = recorder.shard();
        for slot in 0..plan.inflight {
            tasks.push(tokio::spawn(produce(
                connection.clone(),
                queue_ids.clone(),
                index * plan.inflight + slot,
                plan.clone(),
                control.clone(),
                shard.clone(),
            )));
        }
    }
    tasks
}

async fn produce(
    connection: Connection,
    queue_ids: Arc<Vec<i32>>,
    first: usize,
    plan: ProducerPlan,
    control: Arc<Control>,
    shard: Arc<Shard>,
) {
    let msgs = plan.factory.per_request() as u64;
    let bytes = plan.factory.body_bytes_per_request();
    let mut next = first;
    while !control.producers_stopped() {
        let intended = match &plan.pacer {
            Some(pacer) => match pacer.next().await {
                Some(at) => at,
                None => break,
            },
            None => Instant::now(),
        };
        if control.producers_stopped() || !control.claim(msgs) {
            break;
        }
        let queue_id = queue_ids[next % queue_ids.len()];
        next = next.wrapping_add(1);
        let request = match plan.factory.build(queue_id, intended) {
            Ok(request) => request,
            Err(_) => {
                shard.lock().send_failed(&ErrorKind::Protocol);
                break;
            }
        };
        let outcome = match plan.mode {
            SendMode::Oneway => {
                let queued = connection.invoke_oneway(request).await.map(|()| None);
                // Queueing a oneway frame is usually ready at once: yield so
                // these tasks cannot starve the writer and the sampler.
                tokio::task::yield_now().await;
                queued
            }
            SendMode::Sync | SendMode::Batch => connection
                .invoke_timeout(request, plan.timeout)
                .await
                .map(|response| Some(response.code)),
        };
        let latency = elapsed_ns(intended);
        match outcome {
            Ok(None) | Ok(Some(response_code::SUCCESS)) => shard.lock().sent(latency, msgs, bytes),
            Ok(Some(code)) => shard.lock().send_failed(&ErrorKind::Code(code)),
            Err(error) => {
                shard.lock().send_failed(&ErrorKind::from_client(&error));
                if connection.is_closed() {
                    break;
                }
            }
        }
    }
}

/// Everything consumer tasks share.
#[derive(Debug, Clone)]
pub struct ConsumerPlan {
    pub group: String,
    pub topic: String,
    pub pull_batch: i32,
    pub suspend_ms: u64,
    pub timeout: Duration,
    /// Record send-to-receive latency of messages stamped with this run id.
    pub e2e_run_id: Option<u32>,
    /// Pop and batch-ack instead of pulling (`crate::pop`).
    pub pop: bool,
}

/// One task per queue in `ranges` (start offset, optional end offset),
/// spread over the connections to the queue's broker; one shard per
/// connection.
pub fn spawn_consumers(
    connections: &[(String, Connection)],
    ranges: &BTreeMap<MessageQueue, (i64, Option<i64>)>,
    plan: &ConsumerPlan,
    control: &Arc<Control>,
    recorder: &Recorder,
) -> Vec<JoinHandle<()>> {
    let shards: Vec<Arc<Shard>> = connections.iter().map(|_| recorder.shard()).collect();
    let mut used: BTreeMap<&str, usize> = BTreeMap::new();
    let mut tasks = Vec::new();
    for (queue, (start, end)) in ranges {
        let candidates: Vec<usize> = connections
            .iter()
            .enumerate()
            .filter(|(_, (broker, _))| *broker == queue.broker_name)
            .map(|(i, _)| i)
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let turn = used.entry(queue.broker_name.as_str()).or_default();
        let pick = candidates[*turn % candidates.len()];
        *turn += 1;
        control.consumer_started();
        tasks.push(tokio::spawn(consume(
            connections[pick].1.clone(),
            queue.queue_id,
            *start,
            *end,
            plan.clone(),
            control.clone(),
            shards[pick].clone(),
        )));
    }
    tasks
}

async fn consume(
    connection: Connection,
    queue_id: i32,
    start: i64,
    end: Option<i64>,
    plan: ConsumerPlan,
    control: Arc<Control>,
    shard: Arc<Shard>,
) {
    if plan.pop {
        pop::consume(connection, queue_id, end, plan, &control, shard).await;
        control.consumer_finished();
        return;
    }
    let mut offset = start;
    let mut e2e = Vec::new();
    while !control.consumers_stopped() && !matches!(end, Some(end) if offset >= end) {
        let request = pull_request(
            &plan.group,
            &plan.topic,
            queue_id,
            offset,
            plan.pull_batch,
            plan.suspend_ms,
        );
        let sent = Instant::now();
        let response = match connection.invoke_timeout(request, plan.timeout).await {
            Ok(response) => response,
            Err(error) => {
                shard.lock().pull_failed(&ErrorKind::from_client(&error));
                if connection.is_closed() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(PULL_ERROR_BACKOFF_MS)).await;
                continue;
            }
        };
        let arrived = Instant::now();
        let pulled = Pulled {
            latency_ns: arrived.saturating_duration_since(sent).as_nanos() as u64,
            arrived,
        };
        match after_pull(&response, offset, &pulled, &plan, &shard, &mut e2e) {
            Next::Offset(next) => offset = next,
            Next::Stop => break,
            Next::Backoff => tokio::time::sleep(Duration::from_millis(PULL_ERROR_BACKOFF_MS)).await,
        }
    }
    control.consumer_finished();
}

/// When a pull's response arrived and how long it took.
pub(crate) struct Pulled {
    pub latency_ns: u64,
    pub arrived: Instant,
}

/// Where a consumer goes after one pull.
enum Next {
    Offset(i64),
    Stop,
    /// Pull the same offset again after a pause.
    Backoff,
}

/// Counts one pull's response and says where to pull next.
fn after_pull(
    response: &RemotingCommand,
    offset: i64,
    pulled: &Pulled,
    plan: &ConsumerPlan,
    shard: &Shard,
    e2e: &mut Vec<u64>,
) -> Next {
    let next = response
        .ext_fields
        .get_i64("nextBeginOffset")
        .ok()
        .flatten();
    match response.code {
        response_code::SUCCESS => {
            let msgs = count_pulled(&response.body, pulled, plan, shard, e2e);
            Next::Offset(next.unwrap_or(offset + msgs as i64).max(offset))
        }
        // Empty long poll: nothing to count.
        response_code::PULL_NOT_FOUND | response_code::PULL_RETRY_IMMEDIATELY => {
            Next::Offset(next.map_or(offset, |next| next.max(offset)))
        }
        response_code::PULL_OFFSET_MOVED => {
            shard.lock().pull_failed(&ErrorKind::Code(response.code));
            next.map_or(Next::Stop, Next::Offset)
        }
        code => {
            shard.lock().pull_failed(&ErrorKind::Code(code));
            Next::Backoff
        }
    }
}

/// Records a pull body's messages, bytes and e2e latencies; the message
/// count.
pub(crate) fn count_pulled(
    body: &[u8],
    pulled: &Pulled,
    plan: &ConsumerPlan,
    shard: &Shard,
    e2e: &mut Vec<u64>,
) -> u64 {
    let (msgs, bytes, bad) = scan_records(body, plan.e2e_run_id, pulled.arrived, e2e);
    let mut counts = shard.lock();
    counts.pulled(pulled.latency_ns, msgs, bytes);
    for value in e2e.drain(..) {
        counts.e2e_latency.record_ns(value);
    }
    if bad {
        counts.note_error(&ErrorKind::BadRecords);
    }
    msgs
}

/// Counts the records of a pull body (messages, body bytes) and collects
/// the e2e latency of those stamped with `run_id`. The flag is true when
/// the body did not decode to the end.
pub fn scan_records(
    body: &[u8],
    run_id: Option<u32>,
    arrived: Instant,
    e2e: &mut Vec<u64>,
) -> (u64, u64, bool) {
    let now_ns = ns_since_anchor(arrived);
    let mut msgs = 0u64;
    let mut bytes = 0u64;
    for record in records(body, false) {
        let Ok(record) = record else {
            return (msgs, bytes, true);
        };
        msgs += 1;
        bytes += record.body.len() as u64;
        if let (Some(run_id), Some(stamp)) = (run_id, read_stamp(record.body)) {
            if stamp.run_id == run_id {
                e2e.push(now_ns.saturating_sub(stamp.sent_ns));
            }
        }
    }
    (msgs, bytes, false)
}

/// The current max offset of every queue (GET_MAX_OFFSET), using one
/// connection to each queue's broker.
pub async fn max_offsets(
    connections: &[(String, Connection)],
    queues: &[MessageQueue],
) -> Result<BTreeMap<MessageQueue, i64>, BenchError> {
    let mut out = BTreeMap::new();
    for queue in queues {
        let Some((_, connection)) = connections.iter().find(|(b, _)| *b == queue.broker_name)
        else {
            return Err(BenchError::Setup(format!(
                "no connection to the broker of {queue}"
            )));
        };
        let response = connection
            .invoke(max_offset_request(&queue.topic, queue.queue_id))
            .await?;
        if response.code != response_code::SUCCESS {
            return Err(ClientError::from_response(&response).into());
        }
        let header = OffsetResponseHeader::from_ext(&response.ext_fields)?;
        out.insert(queue.clone(), header.offset);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{anchor, filler_body, write_stamp, Stamp};
    use bytes::BytesMut;
    use ferrocket_protocol::record::NewRecord;

    fn record(out: &mut BytesMut, body: &[u8]) {
        let host = "127.0.0.1:10911".parse().unwrap();
        let new = NewRecord {
            topic: "T",
            queue_id: 0,
            flag: 0,
            sys_flag: 0,
            born_timestamp_ms: 1,
            born_host: host,
            store_timestamp_ms: 2,
            store_host: host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body,
            properties: b"",
        };
        new.encode(0, 0, out).unwrap();
    }

    #[test]
    fn scan_counts_records_and_times_only_our_run() {
        let mut ours = filler_body(64);
        write_stamp(
            &mut ours,
            Stamp {
                run_id: 5,
                sent_ns: 1_000,
            },
        );
        let mut other_run = filler_body(64);
        write_stamp(
            &mut other_run,
            Stamp {
                run_id: 6,
                sent_ns: 1_000,
            },
        );
        let foreign = b"not a bench message".to_vec();
        let mut body = BytesMut::new();
        for b in [&ours, &other_run, &foreign, &ours] {
            record(&mut body, b);
        }
        let arrived = anchor() + Duration::from_micros(501);
        let mut e2e = Vec::new();
        let (msgs, bytes, bad) = scan_records(&body, Some(5), arrived, &mut e2e);
        assert_eq!(
            (msgs, bytes, bad),
            (4, 64 * 3 + foreign.len() as u64, false)
        );
        assert_eq!(e2e, vec![500_000, 500_000]);

        // A torn tail is reported, and what came before still counts.
        let torn = &body[..body.len() - 10];
        let mut e2e = Vec::new();
        let (msgs, _, bad) = scan_records(torn, None, arrived, &mut e2e);
        assert_eq!((msgs, bad), (3, true));
        assert!(e2e.is_empty());
    }
}
