//! `--pop`: a consumer task pops its queue (POP_MESSAGE, the Java client's
//! request shape) and acks every pop with one BATCH_ACK_MESSAGE, as
//! `rocketmq-client-rust` does; messages, bytes and the pop round trip
//! are counted like pulls (the ack's round trip is part of the loop).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrocket_client::Connection;
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;

use super::{count_pulled, ConsumerPlan, Pulled, PULL_ERROR_BACKOFF_MS};
use crate::control::Control;
use crate::recorder::{ErrorKind, Shard};

/// How long popped messages stay invisible (the client's default).
const INVISIBLE_TIME_MS: i64 = 60_000;

fn pop_request(plan: &ConsumerPlan, queue_id: i32) -> RemotingCommand {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    RemotingCommand::request(request_code::POP_MESSAGE)
        .with_ext("consumerGroup", &plan.group)
        .with_ext("topic", &plan.topic)
        .with_ext("queueId", queue_id)
        .with_ext("maxMsgNums", plan.pull_batch)
        .with_ext("invisibleTime", INVISIBLE_TIME_MS)
        .with_ext("pollTime", plan.suspend_ms)
        .with_ext("bornTime", now_ms)
        .with_ext("initMode", 0)
        .with_ext("expType", "TAG")
        .with_ext("exp", "*")
        .with_ext("order", "false")
}

/// BATCH_ACK_MESSAGE for a pop of `queue_id` that started at `start`.
fn batch_ack(
    plan: &ConsumerPlan,
    queue_id: i32,
    start: i64,
    pop_time: i64,
    offsets: &[i64],
) -> RemotingCommand {
    let mut bits = Vec::new();
    for offset in offsets {
        let bit = (offset - start).max(0) as usize;
        if bits.len() <= bit / 8 {
            bits.resize(bit / 8 + 1, 0u8);
        }
        bits[bit / 8] |= 1 << (bit % 8);
    }
    // rocketmq-client-rust's form of the bit set: a JSON array of bytes.
    let body = serde_json::json!({
        "brokerName": "",
        "acks": [{
            "c": plan.group, "t": plan.topic, "r": "0", "so": start, "q": queue_id,
            "rq": 0, "pt": pop_time, "it": INVISIBLE_TIME_MS, "b": bits,
        }],
    });
    RemotingCommand::request(request_code::BATCH_ACK_MESSAGE)
        .with_body(body.to_string().into_bytes())
}

/// The pop's start on `queue_id`, from `startOffsetInfo` ("t qid start;...").
fn start_of(response: &RemotingCommand, queue_id: i32) -> Option<i64> {
    let info = response.ext_fields.get("startOffsetInfo")?;
    info.split(';').find_map(|entry| {
        let parts: Vec<&str> = entry.split(' ').collect();
        (parts.len() == 3 && parts[0] == "0" && parts[1].parse() == Ok(queue_id))
            .then(|| parts[2].parse().ok())
            .flatten()
    })
}

pub(crate) async fn consume(
    connection: Connection,
    queue_id: i32,
    end: Option<i64>,
    plan: ConsumerPlan,
    control: &Arc<Control>,
    shard: Arc<Shard>,
) {
    let mut next = 0i64;
    let mut e2e = Vec::new();
    let timeout = plan.timeout;
    while !control.consumers_stopped() && !matches!(end, Some(end) if next >= end) {
        let sent = Instant::now();
        let response = match connection
            .invoke_timeout(pop_request(&plan, queue_id), timeout)
            .await
        {
            Ok(response) => response,
            Err(error) => {
                shard.lock().pull_failed(&ErrorKind::from_client(&error));
                if connection.is_closed() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(PULL_ERROR_BACKOFF_MS)).await;
                continue;
            }
        };
        let arrived = Instant::now();
        match response.code {
            response_code::SUCCESS => {}
            response_code::POLLING_TIMEOUT | response_code::PULL_NOT_FOUND => continue,
            code => {
                shard.lock().pull_failed(&ErrorKind::Code(code));
                tokio::time::sleep(Duration::from_millis(PULL_ERROR_BACKOFF_MS)).await;
                continue;
            }
        }
        let pulled = Pulled {
            latency_ns: arrived.saturating_duration_since(sent).as_nanos() as u64,
            arrived,
        };
        count_pulled(&response.body, &pulled, &plan, &shard, &mut e2e);
        let offsets: Vec<i64> = records(&response.body, false)
            .filter_map(Result::ok)
            .map(|r| r.queue_offset)
            .collect();
        let pop_time = response
            .ext_fields
            .get_i64("popTime")
            .ok()
            .flatten()
            .unwrap_or(0);
        let (Some(start), Some(last)) = (start_of(&response, queue_id), offsets.iter().max())
        else {
            continue;
        };
        next = next.max(last + 1);
        let ack = batch_ack(&plan, queue_id, start, pop_time, &offsets);
        match connection.invoke_timeout(ack, timeout).await {
            Ok(answer) if answer.code == response_code::SUCCESS => {}
            Ok(answer) => shard.lock().pull_failed(&ErrorKind::Code(answer.code)),
            Err(error) => shard.lock().pull_failed(&ErrorKind::from_client(&error)),
        }
    }
}
