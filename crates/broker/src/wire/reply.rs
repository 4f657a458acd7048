//! SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325), Java's
//! `ReplyMessageProcessor`: the reply of a request-reply exchange is pushed
//! at once, as PUSH_REPLY_MESSAGE_TO_CLIENT (326), to the requesting
//! producer's connection, found by its client id in the reply's
//! REPLY_TO_CLIENT property (on whichever shard holds that connection).
//! The answer is SUCCESS (msgId "0", queue offset 0, as Java) when the
//! requester accepted the push, SYSTEM_ERROR otherwise.
//!
//! Difference from Java: replies are not also stored
//! (`storeReplyMessageEnable=false` behaviour); only the push matters to
//! the requester.

use std::rc::Rc;
use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{SendMessageRequestHeader, SendMessageResponseHeader};
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::{shard_of_conn_id, Connection};
use ferrocket_runtime::shard::ShardCall;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::shard::Shard;

/// How long the requester may take to accept a pushed reply
/// (`Broker2Client.callClient`: 10 s in Java).
pub const PUSH_TIMEOUT_MS: u64 = 3_000;

/// The client id's connection among the registered producers.
fn producer_connection(shard: &Shard, client_id: &str) -> Option<u64> {
    shard.clients().with(|clients| {
        clients
            .producers
            .values()
            .find_map(|group| group.get(client_id).map(|channel| channel.conn_id))
    })
}

/// SEND_REPLY_MESSAGE / _V2.
pub(crate) async fn send_reply(
    shard: &Rc<Shard>,
    conn: &Rc<Connection>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = SendMessageRequestHeader::from_ext(&request.ext_fields)?;
    let mut props = Properties::decode_str(header.properties.as_deref().unwrap_or(""));
    let Some(client_id) = props
        .get(properties::REPLY_TO_CLIENT)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
    else {
        return Err(Reject::system(format!(
            "reply message properties[{}] is null",
            properties::REPLY_TO_CLIENT
        )));
    };
    let conn_id = producer_connection(shard, &client_id).ok_or_else(|| {
        Reject::system(format!(
            "push reply message fail, channel of <{client_id}> not found."
        ))
    })?;
    props.insert(properties::PUSH_REPLY_TIME, now_ms().to_string());
    let born = conn.peer_addr();
    let mut push = RemotingCommand::request(request_code::PUSH_REPLY_MESSAGE_TO_CLIENT)
        .with_ext("producerGroup", &header.producer_group)
        .with_ext("topic", &header.topic)
        .with_ext(
            "defaultTopic",
            header.default_topic.as_deref().unwrap_or(""),
        )
        .with_ext(
            "defaultTopicQueueNums",
            header.default_topic_queue_nums.unwrap_or(0),
        )
        .with_ext("queueId", header.queue_id.unwrap_or(0))
        .with_ext("sysFlag", header.sys_flag.unwrap_or(0))
        .with_ext("bornTimestamp", header.born_timestamp.unwrap_or(0))
        .with_ext("flag", header.flag.unwrap_or(0))
        .with_ext("properties", props.to_encoded_string())
        .with_ext("reconsumeTimes", header.reconsume_times.unwrap_or(0))
        .with_ext("unitMode", header.unit_mode)
        .with_ext("bornHost", format!("{}:{}", born.ip(), born.port()))
        .with_ext(
            "storeHost",
            format!(
                "{}:{}",
                shard.env().store_host.ip(),
                shard.env().store_host.port()
            ),
        )
        .with_ext("storeTimestamp", now_ms());
    push.body = request.body.clone();
    let code = push_to(shard, conn_id, push).await?;
    if code != response_code::SUCCESS {
        return Err(Reject::system(format!(
            "push reply message to {client_id} fail (answer {code})."
        )));
    }
    let mut response = RemotingCommand::response_to(request, response_code::SUCCESS, None);
    response.ext_fields = SendMessageResponseHeader {
        msg_id: "0".into(),
        queue_id: header.queue_id.unwrap_or(0).max(0),
        queue_offset: 0,
        transaction_id: None,
        batch_uniq_id: None,
        recall_handle: None,
    }
    .to_ext();
    Ok(response)
}

/// Sends `push` on connection `conn_id` (here or on its shard) and returns
/// the requester's answer code.
async fn push_to(shard: &Shard, conn_id: u64, push: RemotingCommand) -> Result<i32, Reject> {
    let target = usize::from(shard_of_conn_id(conn_id));
    if target == shard.index() {
        return push_here(shard, conn_id, push).await;
    }
    if target >= shard.count() {
        return Err(Reject::system(format!("connection {conn_id} has no shard")));
    }
    shard.call(target, PushReply { conn_id, push }).await?
}

/// On the connection's shard: push a reply and wait for its answer code.
struct PushReply {
    conn_id: u64,
    push: RemotingCommand,
}

impl ShardCall<Shard> for PushReply {
    type Reply = Result<i32, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        push_here(&shard, self.conn_id, self.push).await
    }
}

/// On the connection's shard: sends the push and waits for the answer.
async fn push_here(shard: &Shard, conn_id: u64, push: RemotingCommand) -> Result<i32, Reject> {
    let conn = shard
        .connection(conn_id)
        .ok_or_else(|| Reject::system(format!("connection {conn_id} is closed")))?;
    let answer = conn
        .request(push, Duration::from_millis(PUSH_TIMEOUT_MS))
        .await
        .map_err(|err| Reject::system(format!("push reply message failed: {err}")))?;
    Ok(answer.code)
}
