//! Pulls with a subscription expression of any type, SQL92 included
//! (Java's `MessageSelector.bySql`). The broker evaluates SQL92 on message
//! properties (it must run with `enablePropertyFilter=true`); what it
//! answers is returned as is. [`PullConsumer::pull`] (TAG expressions,
//! filtered again on the client) sends its request through here too.

use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{
    pull_sys_flag, PullMessageRequestHeader, PullMessageResponseHeader,
};
use ferrocket_protocol::RemotingCommand;

use crate::consumer::{
    PullConsumer, PullResult, PullStatus, PULL_MSG_NUMS_MAX, PULL_TIMEOUT_MARGIN_MS,
};
use crate::message::decode_messages;
use crate::producer::now_ms;
use crate::route::MessageQueue;
use crate::ClientError;

/// Expression type of SQL92 subscriptions (`ExpressionType.SQL92`).
pub const EXPRESSION_TYPE_SQL92: &str = "SQL92";

impl PullConsumer {
    /// Pulls up to `max_nums` messages of `queue` from `offset` that match
    /// `expression` of `expression_type` ("TAG" or "SQL92"), filtered by the
    /// broker only. With `suspend`, the broker holds the request that long
    /// when there is nothing new.
    pub async fn pull_with_expression(
        &self,
        queue: &MessageQueue,
        offset: i64,
        max_nums: i32,
        expression: &str,
        expression_type: &str,
        suspend: Option<Duration>,
    ) -> Result<PullResult, ClientError> {
        if !(1..=PULL_MSG_NUMS_MAX).contains(&max_nums) {
            return Err(ClientError::InvalidArgument(format!(
                "max_nums {max_nums} is outside 1..={PULL_MSG_NUMS_MAX}"
            )));
        }
        let mut sys_flag = pull_sys_flag::SUBSCRIPTION;
        if suspend.is_some() {
            sys_flag |= pull_sys_flag::SUSPEND;
        }
        let suspend_ms = suspend.map_or(0, |d| d.as_millis() as u64);
        let header = PullMessageRequestHeader {
            consumer_group: self.config().group.clone(),
            topic: queue.topic.clone(),
            queue_id: queue.queue_id,
            queue_offset: offset,
            max_msg_nums: max_nums,
            sys_flag,
            commit_offset: 0,
            suspend_timeout_millis: Some(suspend_ms as i64),
            subscription: Some(expression.to_string()),
            sub_version: Some(now_ms()),
            expression_type: Some(expression_type.to_string()),
            max_msg_bytes: None,
        };
        let mut request = RemotingCommand::request(request_code::PULL_MESSAGE);
        request.ext_fields = header.to_ext();
        let timeout = Duration::from_millis(
            suspend_ms + PULL_TIMEOUT_MARGIN_MS.max(self.config().connection.request_timeout_ms),
        );
        let addr = self.broker_addr(queue).await?;
        let response = self
            .namesrv()
            .pool()
            .invoke_timeout(&addr, request, timeout)
            .await?;
        let status = match response.code {
            response_code::SUCCESS => PullStatus::Found,
            response_code::PULL_NOT_FOUND => PullStatus::NoNewMsg,
            response_code::PULL_RETRY_IMMEDIATELY => PullStatus::NoMatchedMsg,
            response_code::PULL_OFFSET_MOVED => PullStatus::OffsetIllegal,
            _ => return Err(ClientError::from_response(&response)),
        };
        let answer = PullMessageResponseHeader::from_ext(&response.ext_fields)?;
        let messages = if status == PullStatus::Found {
            decode_messages(&response.body, self.config().verify_crc)?
        } else {
            Vec::new()
        };
        Ok(PullResult {
            status,
            next_begin_offset: answer.next_begin_offset,
            min_offset: answer.min_offset,
            max_offset: answer.max_offset,
            suggest_which_broker_id: answer.suggest_which_broker_id,
            messages,
        })
    }
}
