//! How each group consumes each topic (`MessageRequestModeManager`): PULL
//! (the default) or POP, set by SET_MESSAGE_REQUEST_MODE (401) and kept in
//! `config/messageRequestMode.json` in RocketMQ's format. QUERY_ASSIGNMENT
//! (400) answers with it, which is how a push consumer that lets the
//! broker balance (`clientRebalance=false`) learns to pop.

use std::collections::BTreeMap;

use ferrocket_store::ConfigDir;
use serde::{Deserialize, Serialize};

use crate::error::BrokerError;

pub const REQUEST_MODES_FILE: &str = "messageRequestMode.json";

/// `MessageRequestMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum RequestMode {
    #[default]
    #[serde(rename = "PULL")]
    Pull,
    #[serde(rename = "POP")]
    Pop,
}

/// `SetMessageRequestModeRequestBody`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestModeEntry {
    pub topic: String,
    pub consumer_group: String,
    #[serde(default)]
    pub mode: RequestMode,
    #[serde(default)]
    pub pop_share_queue_num: i32,
}

/// topic -> group -> mode, as messageRequestMode.json holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestModeTable {
    #[serde(default)]
    pub message_request_mode_map: BTreeMap<String, BTreeMap<String, RequestModeEntry>>,
}

impl RequestModeTable {
    pub fn entry(&self, topic: &str, group: &str) -> Option<&RequestModeEntry> {
        self.message_request_mode_map
            .get(topic)
            .and_then(|groups| groups.get(group))
    }

    /// Sets an entry; answers whether anything changed.
    pub fn set(&mut self, entry: RequestModeEntry) -> bool {
        let groups = self
            .message_request_mode_map
            .entry(entry.topic.clone())
            .or_default();
        groups.insert(entry.consumer_group.clone(), entry.clone()) != Some(entry)
    }
}

pub fn load_table(dir: &ConfigDir) -> Result<RequestModeTable, BrokerError> {
    Ok(dir.read_json(REQUEST_MODES_FILE)?.unwrap_or_default())
}
