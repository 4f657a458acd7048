//! Transactional messages through the proxy, as RocketMQ's proxy keeps
//! them: a half message's send leaves the proxy what END_TRANSACTION needs
//! (broker, offsets) under its transaction id; EndTransaction sends it. The
//! proxy registers as a producer of every topic its v5 producers publish
//! (the topic is the producer group, as in the proxy), so a broker's
//! CHECK_TRANSACTION_STATE for an orphaned half message arrives on the
//! proxy's connection and goes on to a producer of that topic as a
//! RecoverOrphanedTransactionCommand over its Telemetry stream; the
//! producer's checker answers with EndTransaction (source SERVER_CHECK).

use std::collections::HashMap;
use std::time::Duration;

use ferrocket_protocol::body::{encode_json, HeartbeatData, ProducerData};
use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::message_id::decode_offset_msg_id;
use ferrocket_protocol::record::decode_record;
use ferrocket_protocol::RemotingCommand;

use crate::backend::Backend;
pub use crate::halves::{Half, Halves};
use crate::pb::{self, Code, TransactionResolution, TransactionSource};
use crate::status::{from_answer, status};

/// `commitOrRollback` values (Java `MessageSysFlag`).
const COMMIT: i32 = 0x8;
const ROLLBACK: i32 = 0xC;
const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// How often the proxy tells the brokers which producer groups it holds.
pub const PRODUCER_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(5);

/// The half message of a transactional send the broker accepted.
pub fn half_of_send(
    broker_name: &str,
    topic: &str,
    message_id: &str,
    answer: &RemotingCommand,
) -> Option<Half> {
    let msg_id = answer.ext_fields.get("msgId")?;
    let queue_offset = answer.ext_fields.get("queueOffset")?.parse().ok()?;
    let commit_log_offset = decode_offset_msg_id(msg_id).ok()?.commit_log_offset;
    Some(Half {
        broker_name: broker_name.to_string(),
        topic: topic.to_string(),
        queue_offset,
        commit_log_offset,
        message_id: message_id.to_string(),
    })
}

/// EndTransaction.
pub async fn end_transaction(
    backend: &Backend,
    request: pb::EndTransactionRequest,
) -> pb::EndTransactionResponse {
    let answer = |status| pb::EndTransactionResponse {
        status: Some(status),
    };
    let kind = match TransactionResolution::try_from(request.resolution) {
        Ok(TransactionResolution::Commit) => COMMIT,
        Ok(TransactionResolution::Rollback) => ROLLBACK,
        _ => {
            return answer(status(
                Code::BadRequest,
                "resolution must be COMMIT or ROLLBACK",
            ))
        }
    };
    let Some(half) = backend.halves.take(&request.transaction_id) else {
        return answer(status(
            Code::InvalidTransactionId,
            format!(
                "no half message with transaction id {}",
                request.transaction_id
            ),
        ));
    };
    let from_check = request.source == TransactionSource::SourceServerCheck as i32;
    let remoting = RemotingCommand::request(request_code::END_TRANSACTION)
        .with_ext("producerGroup", &half.topic)
        .with_ext("tranStateTableOffset", half.queue_offset)
        .with_ext("commitLogOffset", half.commit_log_offset)
        .with_ext("commitOrRollback", kind)
        .with_ext("fromTransactionCheck", from_check)
        .with_ext("msgId", &half.message_id)
        .with_ext("transactionId", &request.transaction_id);
    match backend
        .invoke_broker(&half.broker_name, remoting, CALL_TIMEOUT)
        .await
    {
        Ok(reply) => answer(from_answer(reply.code, reply.remark.as_deref())),
        Err(failed) => {
            // Not ended: the broker's check will ask again.
            backend.halves.remember(&request.transaction_id, half);
            answer(failed)
        }
    }
}

/// A broker's CHECK_TRANSACTION_STATE, handed to a producer of the
/// message's topic. Dropped (the broker checks again later) when no
/// producer of that topic is connected.
pub fn on_check(backend: &Backend, check: &RemotingCommand) {
    let field = |name: &str| check.ext_fields.get(name).map(str::to_string);
    let (Some(transaction_id), Some(broker_name)) = (field("transactionId"), field("brokerName"))
    else {
        tracing::warn!("transaction check without transactionId or brokerName");
        return;
    };
    let Ok(record) = decode_record(&check.body, true) else {
        tracing::warn!(%transaction_id, "transaction check with an undecodable message");
        return;
    };
    let message = match crate::convert::record_message(&record, None) {
        Ok(message) => message,
        Err(e) => {
            tracing::warn!(%transaction_id, "transaction check not handed on: {e}");
            return;
        }
    };
    let topic = record.topic.to_string();
    let offsets = (
        field("tranStateTableOffset").and_then(|v| v.parse().ok()),
        field("commitLogOffset").and_then(|v| v.parse().ok()),
    );
    let (Some(queue_offset), Some(commit_log_offset)) = offsets else {
        tracing::warn!(%transaction_id, "transaction check without offsets");
        return;
    };
    let message_id = field("msgId").unwrap_or_default();
    backend.halves.remember(
        &transaction_id,
        Half {
            broker_name,
            topic: topic.clone(),
            queue_offset,
            commit_log_offset,
            message_id,
        },
    );
    let command = pb::TelemetryCommand {
        status: None,
        command: Some(
            pb::telemetry_command::Command::RecoverOrphanedTransactionCommand(
                pb::RecoverOrphanedTransactionCommand {
                    message: Some(message),
                    transaction_id,
                },
            ),
        ),
    };
    if !backend.sessions.send_to_publisher(&topic, command) {
        tracing::debug!(%topic, "no producer of this topic to check a transaction with");
    }
}

/// Tells every broker of every published topic that the proxy produces to
/// it (HEART_BEAT with the topics as producer groups), so transaction
/// checks come to the proxy.
pub async fn heartbeat_producers(backend: &Backend, client_id: &str) {
    let mut groups_by_broker: HashMap<String, Vec<String>> = HashMap::new();
    for topic in backend.sessions.published_topics() {
        let Ok(route) = backend.route(&topic).await else {
            continue;
        };
        for broker in &route.broker_datas {
            if let Some(addr) = broker.master_addr() {
                groups_by_broker
                    .entry(addr.to_string())
                    .or_default()
                    .push(topic.clone());
            }
        }
    }
    for (addr, groups) in groups_by_broker {
        let data = HeartbeatData {
            client_id: client_id.to_string(),
            producer_data_set: groups
                .into_iter()
                .map(|group_name| ProducerData { group_name })
                .collect(),
            consumer_data_set: Vec::new(),
        };
        let request =
            RemotingCommand::request(request_code::HEART_BEAT).with_body(encode_json(&data));
        if let Err(failed) = backend.invoke(&addr, request, CALL_TIMEOUT).await {
            tracing::debug!(%addr, message = %failed.message, "producer heartbeat to a broker failed");
        }
    }
}
