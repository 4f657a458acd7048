//! Producer administration: who produces for a group
//! (GET_PRODUCER_CONNECTION_LIST, 204, mqadmin's `producerConnection`).

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use serde::Deserialize;

use crate::admin::Admin;
use crate::consume_admin::ClientConnection;
use crate::error::expect_success;
use crate::json::decode_body;
use crate::ClientError;

/// GET_PRODUCER_CONNECTION_LIST (Java `RequestCode`).
const GET_PRODUCER_CONNECTION_LIST: i32 = 204;

/// GET_PRODUCER_CONNECTION_LIST body (`ProducerConnection`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ProducerConnection {
    pub connection_set: Vec<ClientConnection>,
}

impl Admin {
    /// The clients of producer `group` connected to one broker; `None`
    /// when none is (Java's broker answers SYSTEM_ERROR, "the producer
    /// group[G] not exist").
    pub async fn producer_connection(
        &self,
        broker_addr: &str,
        group: &str,
    ) -> Result<Option<ProducerConnection>, ClientError> {
        let request =
            RemotingCommand::request(GET_PRODUCER_CONNECTION_LIST).with_ext("producerGroup", group);
        let response = self.pool().invoke(broker_addr, request).await?;
        let absent = response.code == response_code::SYSTEM_ERROR
            && response
                .remark
                .as_deref()
                .is_some_and(|r| r.ends_with("] not exist"));
        if absent {
            return Ok(None);
        }
        let response = expect_success(response)?;
        Ok(Some(decode_body(&response.body)?))
    }
}
