//! PullMessage for v5 pull consumers: one PULL_MESSAGE to the broker the
//! message queue names (long polling up to the request's timeout, clamped
//! like a receive), answered as the proxy streams it: a status, the
//! messages, then the next offset to pull from.

use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{
    pull_sys_flag, PullMessageRequestHeader, PullMessageResponseHeader,
};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;

use crate::backend::Backend;
use crate::convert::{duration_ms, record_message};
use crate::limits::{LONG_POLL_MS_MAX, RECEIVE_BATCH_MAX};
use crate::pb::{self, pull_message_response::Content, Code, FilterType, Status};
use crate::status::{from_answer, ok, status};

const CALL_TIMEOUT: Duration = Duration::from_secs(3);

pub type Responses = Vec<pb::PullMessageResponse>;

fn item(content: Content) -> pb::PullMessageResponse {
    pb::PullMessageResponse {
        content: Some(content),
    }
}

fn only(status: Status, next_offset: Option<i64>) -> Responses {
    let mut out = vec![item(Content::Status(status))];
    out.extend(next_offset.map(|next| item(Content::NextOffset(next))));
    out
}

fn pull_request(
    request: &pb::PullMessageRequest,
    group: &str,
    topic: &str,
    queue_id: i32,
    poll_ms: i64,
) -> RemotingCommand {
    let filter = request.filter_expression.as_ref();
    let expression_type = match filter.map(|f| f.r#type) {
        Some(t) if t == FilterType::Sql as i32 => "SQL92",
        _ => "TAG",
    };
    let expression = filter
        .map(|f| f.expression.trim().to_string())
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| "*".into());
    let header = PullMessageRequestHeader {
        consumer_group: group.to_string(),
        topic: topic.to_string(),
        queue_id,
        queue_offset: request.offset,
        max_msg_nums: request.batch_size.clamp(1, RECEIVE_BATCH_MAX),
        sys_flag: pull_sys_flag::SUBSCRIPTION
            | if poll_ms > 0 {
                pull_sys_flag::SUSPEND
            } else {
                0
            },
        commit_offset: 0,
        suspend_timeout_millis: Some(poll_ms),
        subscription: Some(expression),
        sub_version: Some(0),
        expression_type: Some(expression_type.to_string()),
        max_msg_bytes: None,
    };
    let mut remoting = RemotingCommand::request(request_code::PULL_MESSAGE);
    remoting.ext_fields = header.to_ext();
    remoting
}

/// PullMessage: the whole answer stream.
pub async fn pull_message(backend: &Backend, request: pb::PullMessageRequest) -> Responses {
    let group = request
        .group
        .as_ref()
        .map_or("", |g| g.name.as_str())
        .to_string();
    let queue = request.message_queue.as_ref();
    let topic = queue
        .and_then(|q| q.topic.as_ref())
        .map_or("", |t| t.name.as_str())
        .to_string();
    let broker = queue
        .and_then(|q| q.broker.as_ref())
        .map_or("", |b| b.name.as_str())
        .to_string();
    let queue_id = queue.map_or(-1, |q| q.id);
    if group.is_empty() || topic.is_empty() || broker.is_empty() || queue_id < 0 {
        return only(
            status(
                Code::BadRequest,
                "a group and a message queue with its broker are needed",
            ),
            None,
        );
    }
    if request.offset < 0 {
        return only(
            status(Code::IllegalOffset, "offsets are never negative"),
            None,
        );
    }
    let poll_ms = request
        .long_polling_timeout
        .as_ref()
        .map_or(0, duration_ms)
        .clamp(0, LONG_POLL_MS_MAX);
    let remoting = pull_request(&request, &group, &topic, queue_id, poll_ms);
    let timeout = Duration::from_millis(poll_ms as u64) + CALL_TIMEOUT;
    let answer = match backend.invoke_broker(&broker, remoting, timeout).await {
        Ok(answer) => answer,
        Err(failed) => return only(failed, None),
    };
    let next = PullMessageResponseHeader::from_ext(&answer.ext_fields)
        .ok()
        .map(|h| h.next_begin_offset);
    match answer.code {
        response_code::SUCCESS => {
            let mut out = vec![item(Content::Status(ok()))];
            for record in records(&answer.body, true).flatten() {
                match record_message(&record, None) {
                    Ok(message) => out.push(item(Content::Message(message))),
                    Err(e) => tracing::warn!(
                        topic = record.topic,
                        offset = record.queue_offset,
                        "a pulled message is not delivered: {e}"
                    ),
                }
            }
            out.extend(next.map(|n| item(Content::NextOffset(n))));
            out
        }
        response_code::PULL_NOT_FOUND | response_code::PULL_RETRY_IMMEDIATELY => {
            only(status(Code::MessageNotFound, "no new message"), next)
        }
        response_code::PULL_OFFSET_MOVED => {
            only(status(Code::IllegalOffset, "the offset moved"), next)
        }
        code => only(from_answer(code, answer.remark.as_deref()), next),
    }
}
