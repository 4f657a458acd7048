//! Requests the broker passes on to one client of a group and whose
//! answer it returns as the client gave it (Java's
//! `AdminBrokerProcessor.callConsumer`): GET_CONSUMER_RUNNING_INFO (307,
//! what `mqadmin consumerStatus` shows) and CONSUME_MESSAGE_DIRECTLY (309,
//! `mqadmin consumeMessage`). The client's connection may live on any
//! shard: the request goes there as a typed call.

use std::rc::Rc;
use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::message_id::decode_offset_msg_id;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::{shard_of_conn_id, Connection, ConnectionError};
use ferrocket_runtime::shard::ShardCall;

use crate::error::Reject;
use crate::services::records::{try_read_record_through, view};
use crate::shard::clients::conn_infos;
use crate::shard::Shard;

/// How long the client has to answer (Java's `Broker2Client.callClient`).
pub const CALL_CLIENT_TIMEOUT_MS: u64 = 10_000;
/// The ordinal of MQVersion V3_1_8_SNAPSHOT: older clients cannot answer.
pub const CLIENT_VERSION_MIN: i32 = 62;

/// GET_CONSUMER_RUNNING_INFO (header consumerGroup, clientId, jstackEnable).
pub(crate) async fn consumer_running_info(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let mut forwarded = RemotingCommand::request(request_code::GET_CONSUMER_RUNNING_INFO);
    forwarded.ext_fields = request.ext_fields.clone();
    forwarded.body = request.body.clone();
    call_consumer(shard, request, forwarded).await
}

/// CONSUME_MESSAGE_DIRECTLY (header consumerGroup, clientId, msgId, topic):
/// the stored message, found by its offset id, goes to the client, which
/// consumes it and says how that went.
pub(crate) async fn consume_message_directly(
    shard: &Rc<Shard>,
    conn: &Connection,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let msg_id = request.ext_fields.required("msgId")?;
    let id = decode_offset_msg_id(msg_id).map_err(|_| {
        Reject::new(
            response_code::INVALID_PARAMETER,
            format!("msgId {msg_id} is not an offset message id"),
        )
    })?;
    let offset = id.commit_log_offset;
    let record = try_read_record_through(shard.store(), offset)
        .await?
        .ok_or_else(|| Reject::system(format!("can not find message by the offset, {offset}")))?;
    crate::shard::access::check_stored(shard, conn, request, view(&record)?.topic)?;
    let mut forwarded = RemotingCommand::request(request_code::CONSUME_MESSAGE_DIRECTLY);
    forwarded.ext_fields = request.ext_fields.clone();
    forwarded
        .ext_fields
        .insert("brokerName", &shard.config().broker_name);
    if let Some(topic) = request.ext_fields.get("topic").and_then(|t| shard.topic(t)) {
        forwarded
            .ext_fields
            .insert("topicSysFlag", topic.topic_sys_flag.to_string());
    }
    forwarded.body = record;
    call_consumer(shard, request, forwarded).await
}

/// Finds the client, checks it is new enough, and asks it on the shard
/// holding its connection.
async fn call_consumer(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
    forwarded: RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let group = request.ext_fields.required("consumerGroup")?.to_string();
    let client_id = request.ext_fields.get("clientId").unwrap_or("").to_string();
    let conn_id = shard.clients().with(|clients| {
        let channel = clients.consumers.get(&group)?.clients.get(&client_id)?;
        Some(channel.conn_id)
    });
    let Some(conn_id) = conn_id else {
        return Err(Reject::system(format!(
            "The Consumer {group} {client_id} not online"
        )));
    };
    let version = conn_infos(shard, &[conn_id])
        .await?
        .get(&conn_id)
        .map_or(0, |info| info.version);
    if version < CLIENT_VERSION_MIN {
        let desc = ferrocket_protocol::version::version_desc(version);
        return Err(Reject::system(format!(
            "The Consumer {client_id} Version {desc} too low to finish, please upgrade it to \
             V3_1_8_SNAPSHOT"
        )));
    }
    let target = usize::from(shard_of_conn_id(conn_id));
    let ask = AskClient {
        conn_id,
        who: format!("{group} {client_id}"),
        command: forwarded,
    };
    shard.call(target, ask).await?
}

/// On the shard holding the connection: the request, and the client's
/// answer as it is.
struct AskClient {
    conn_id: u64,
    /// "group clientId", for the error remarks.
    who: String,
    command: RemotingCommand,
}

impl ShardCall<Shard> for AskClient {
    type Reply = Result<RemotingCommand, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let who = &self.who;
        let Some(conn) = shard.connection(self.conn_id) else {
            return Err(Reject::system(format!("The Consumer {who} not online")));
        };
        let timeout = Duration::from_millis(CALL_CLIENT_TIMEOUT_MS);
        match conn.request(self.command, timeout).await {
            Ok(answer) => Ok(answer),
            Err(ConnectionError::Timeout { peer, timeout_ms }) => Err(Reject::new(
                response_code::CONSUME_MSG_TIMEOUT,
                format!(
                    "consumer {who} Timeout: wait response on the channel {peer} timeout, \
                     {timeout_ms}(ms)"
                ),
            )),
            Err(error) => Err(Reject::system(format!(
                "invoke consumer {who} Exception: {error}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_oldest_client_that_can_answer_is_v3_1_8_snapshot() {
        let desc = ferrocket_protocol::version::version_desc(super::CLIENT_VERSION_MIN);
        assert_eq!(desc, "V3_1_8_SNAPSHOT");
    }
}
