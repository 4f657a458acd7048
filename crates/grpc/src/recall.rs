//! RecallMessage (RocketMQ 5.3): the handle names the broker that holds
//! the timer message; the call goes there as RECALL_MESSAGE (370), as
//! RocketMQ's proxy sends it. As there, a handle that cannot be read is
//! answered INTERNAL_SERVER_ERROR ("recall handle is invalid"), and the
//! broker's refusals keep their remark (its ILLEGAL_OPERATION, for a
//! handle of another topic or broker or past its time, becomes
//! INTERNAL_SERVER_ERROR too).

use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{RecallMessageRequestHeader, RecallMessageResponseHeader};
use ferrocket_protocol::recall::RecallHandle;
use ferrocket_protocol::RemotingCommand;

use crate::backend::Backend;
use crate::pb::{self, Code, Status};
use crate::status::{from_answer, ok, status};

/// How long the proxy waits for the broker (Java's proxy: 2 s).
const RECALL_TIMEOUT: Duration = Duration::from_secs(2);

/// RecallMessage: asks the handle's broker to drop the held message.
pub async fn recall_message(
    backend: &Backend,
    request: pb::RecallMessageRequest,
) -> pb::RecallMessageResponse {
    match recall(backend, request).await {
        Ok(message_id) => pb::RecallMessageResponse {
            status: Some(ok()),
            message_id,
        },
        Err(failed) => pb::RecallMessageResponse {
            status: Some(failed),
            message_id: String::new(),
        },
    }
}

async fn recall(backend: &Backend, request: pb::RecallMessageRequest) -> Result<String, Status> {
    let topic = request.topic.map(|t| t.name).unwrap_or_default();
    if topic.is_empty() {
        return Err(status(Code::IllegalTopic, "topic name cannot be empty"));
    }
    let handle = RecallHandle::decode(&request.recall_handle)
        .map_err(|err| status(Code::InternalServerError, err.to_string()))?;
    let header = RecallMessageRequestHeader {
        producer_group: None,
        topic,
        recall_handle: request.recall_handle,
        broker_name: Some(handle.broker_name.clone()),
    };
    let mut remoting = RemotingCommand::request(request_code::RECALL_MESSAGE);
    remoting.ext_fields = header.to_ext();
    let answer = backend
        .invoke_broker(&handle.broker_name, remoting, RECALL_TIMEOUT)
        .await?;
    if answer.code != response_code::SUCCESS {
        return Err(from_answer(answer.code, answer.remark.as_deref()));
    }
    let recalled = RecallMessageResponseHeader::from_ext(&answer.ext_fields)
        .map_err(|err| status(Code::InternalServerError, err.to_string()))?;
    Ok(recalled.msg_id)
}
