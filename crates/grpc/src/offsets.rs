//! The offset calls of pull-style v5 consumers: GetOffset and UpdateOffset
//! (a group's consumer offset: QUERY_ / UPDATE_CONSUMER_OFFSET) and
//! QueryOffset (a queue's first or last offset, or the first stored at a
//! time: GET_MIN_OFFSET / GET_MAX_OFFSET / SEARCH_OFFSET_BY_TIMESTAMP), each
//! sent to the broker the message queue names.

use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{
    OffsetResponseHeader, QueryConsumerOffsetRequestHeader, QueueRequestHeader,
    SearchOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use ferrocket_protocol::RemotingCommand;

use crate::backend::Backend;
use crate::convert::timestamp_ms;
use crate::pb::{self, Code, QueryOffsetPolicy, Status};
use crate::status::{from_answer, ok, status};

pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// Topic, queue id and broker of a request's message queue.
fn queue_of(queue: Option<&pb::MessageQueue>) -> Result<(String, i32, String), Status> {
    let queue = queue.ok_or_else(|| status(Code::BadRequest, "no message queue"))?;
    let topic = queue.topic.as_ref().map_or("", |t| t.name.as_str());
    let broker = queue.broker.as_ref().map_or("", |b| b.name.as_str());
    if topic.is_empty() {
        return Err(status(Code::IllegalTopic, "no topic"));
    }
    if broker.is_empty() || queue.id < 0 {
        return Err(status(
            Code::BadRequest,
            "the message queue names no broker and queue",
        ));
    }
    Ok((topic.to_string(), queue.id, broker.to_string()))
}

fn group_of(group: Option<&pb::Resource>) -> Result<String, Status> {
    group
        .map(|g| g.name.clone())
        .filter(|g| !g.is_empty())
        .ok_or_else(|| status(Code::IllegalConsumerGroup, "no consumer group"))
}

/// Sends `request` to `broker`; the offset of a successful answer.
pub(crate) async fn offset_call(
    backend: &Backend,
    broker: &str,
    request: RemotingCommand,
) -> Result<i64, Status> {
    let answer = backend.invoke_broker(broker, request, CALL_TIMEOUT).await?;
    match answer.code {
        response_code::SUCCESS => OffsetResponseHeader::from_ext(&answer.ext_fields)
            .map(|h| h.offset)
            .map_err(|e| status(Code::InternalServerError, e.to_string())),
        response_code::QUERY_NOT_FOUND => Err(status(
            Code::OffsetNotFound,
            "the group has no offset for this queue",
        )),
        code => Err(from_answer(code, answer.remark.as_deref())),
    }
}

/// GetOffset: the group's consumer offset of one queue.
pub async fn get_offset(backend: &Backend, request: pb::GetOffsetRequest) -> pb::GetOffsetResponse {
    let asked = async {
        let group = group_of(request.group.as_ref())?;
        let (topic, queue_id, broker) = queue_of(request.message_queue.as_ref())?;
        let header = QueryConsumerOffsetRequestHeader {
            consumer_group: group,
            topic,
            queue_id,
            set_zero_if_not_found: Some("false".into()),
        };
        let mut remoting = RemotingCommand::request(request_code::QUERY_CONSUMER_OFFSET);
        remoting.ext_fields = header.to_ext();
        offset_call(backend, &broker, remoting).await
    };
    match asked.await {
        Ok(offset) => pb::GetOffsetResponse {
            status: Some(ok()),
            offset,
        },
        Err(failed) => pb::GetOffsetResponse {
            status: Some(failed),
            offset: 0,
        },
    }
}

/// UpdateOffset: stores the group's consumer offset of one queue.
pub async fn update_offset(
    backend: &Backend,
    request: pb::UpdateOffsetRequest,
) -> pb::UpdateOffsetResponse {
    let updated = async {
        let group = group_of(request.group.as_ref())?;
        let (topic, queue_id, broker) = queue_of(request.message_queue.as_ref())?;
        if request.offset < 0 {
            return Err(status(Code::IllegalOffset, "offsets are never negative"));
        }
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: group,
            topic,
            queue_id,
            commit_offset: request.offset,
        };
        let mut remoting = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET);
        remoting.ext_fields = header.to_ext();
        let answer = backend
            .invoke_broker(&broker, remoting, CALL_TIMEOUT)
            .await?;
        Ok(from_answer(answer.code, answer.remark.as_deref()))
    };
    let status = updated.await.unwrap_or_else(|failed| failed);
    pb::UpdateOffsetResponse {
        status: Some(status),
    }
}

/// QueryOffset: a queue's first or last offset, or its first at a time.
pub async fn query_offset(
    backend: &Backend,
    request: pb::QueryOffsetRequest,
) -> pb::QueryOffsetResponse {
    let asked = async {
        let (topic, queue_id, broker) = queue_of(request.message_queue.as_ref())?;
        let policy = QueryOffsetPolicy::try_from(request.query_offset_policy)
            .map_err(|_| status(Code::BadRequest, "unknown query offset policy"))?;
        let remoting = match policy {
            QueryOffsetPolicy::Timestamp => {
                let at = request.timestamp.as_ref().ok_or_else(|| {
                    status(Code::BadRequest, "the TIMESTAMP policy needs a timestamp")
                })?;
                let header = SearchOffsetRequestHeader {
                    topic,
                    queue_id,
                    timestamp: timestamp_ms(at),
                };
                let mut remoting =
                    RemotingCommand::request(request_code::SEARCH_OFFSET_BY_TIMESTAMP);
                remoting.ext_fields = header.to_ext();
                remoting
            }
            QueryOffsetPolicy::Beginning | QueryOffsetPolicy::End => {
                let code = match policy {
                    QueryOffsetPolicy::Beginning => request_code::GET_MIN_OFFSET,
                    _ => request_code::GET_MAX_OFFSET,
                };
                let mut remoting = RemotingCommand::request(code);
                remoting.ext_fields = QueueRequestHeader { topic, queue_id }.to_ext();
                remoting
            }
        };
        offset_call(backend, &broker, remoting).await
    };
    match asked.await {
        Ok(offset) => pb::QueryOffsetResponse {
            status: Some(ok()),
            offset,
        },
        Err(failed) => pb::QueryOffsetResponse {
            status: Some(failed),
            offset: 0,
        },
    }
}
