//! RECALL_MESSAGE (370, RocketMQ 5.3): takes back a timer message before
//! it is due, by the recall handle its send answered
//! ([`crate::SendResult::recall_handle`]), as Java's
//! `DefaultMQProducer.recallMessage` does.

use std::time::Duration;

use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::header::{RecallMessageRequestHeader, RecallMessageResponseHeader};
use ferrocket_protocol::recall::RecallHandle;
use ferrocket_protocol::RemotingCommand;

use crate::error::{expect_success, ClientError};
use crate::producer::Producer;

impl Producer {
    /// Recalls the message `handle` names in `topic`; answers its unique
    /// key. The request goes to the master of the broker the handle names.
    pub async fn recall(&self, topic: &str, handle: &str) -> Result<String, ClientError> {
        let decoded = RecallHandle::decode(handle)
            .map_err(|err| ClientError::InvalidArgument(err.to_string()))?;
        let addr = self
            .namesrv()
            .find_master_addr(&decoded.broker_name)
            .await?;
        let header = RecallMessageRequestHeader {
            producer_group: Some(self.config().group.clone()),
            topic: topic.to_string(),
            recall_handle: handle.to_string(),
            broker_name: Some(decoded.broker_name),
        };
        let mut request = RemotingCommand::request(request_code::RECALL_MESSAGE);
        request.ext_fields = header.to_ext();
        let timeout = Duration::from_millis(self.config().send_timeout_ms);
        let response = self
            .namesrv()
            .pool()
            .invoke_timeout(&addr, request, timeout)
            .await?;
        let response = expect_success(response)?;
        Ok(RecallMessageResponseHeader::from_ext(&response.ext_fields)?.msg_id)
    }
}
