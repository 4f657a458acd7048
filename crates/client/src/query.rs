//! Finding messages (Java's `MQAdminImpl.queryMessage` / `viewMessage` and
//! mqadmin's queryMsgByOffset): by offset message id (VIEW_MESSAGE_BY_ID
//! to the broker the id names), by key or unique key (QUERY_MESSAGE to
//! every master serving the topic), and by queue offset (one pull).

use std::time::{SystemTime, UNIX_EPOCH};

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{pull_sys_flag, PullMessageRequestHeader};
use ferrocket_protocol::message_id::decode_offset_msg_id;
use ferrocket_protocol::RemotingCommand;

use crate::message::decode_messages;
use crate::{Admin, ClientError, MessageExt};

/// Most messages a key query asks each broker for (`maxNum`).
pub const QUERY_MAX_NUM_DEFAULT: i32 = 64;
/// Group named in the pull of a query by offset (mqadmin's tools group).
pub const TOOLS_GROUP: &str = "TOOLS_CONSUMER";
/// Flag asking the broker for a unique-key query (`_UNIQUE_KEY_QUERY`).
const UNIQUE_KEY_QUERY_FLAG: &str = "_UNIQUE_KEY_QUERY";

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Which form of message id [`Admin::find_by_id`] matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdForm {
    /// The broker's offset message id (store host + CommitLog offset).
    OffsetId,
    /// The producer's unique key (UNIQ_KEY), found through the index.
    UniqueKey,
}

/// A key query: which messages of `topic` to look for, stored within
/// `[begin_ms, end_ms]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyQuery {
    pub topic: String,
    pub key: String,
    pub max_num: i32,
    pub begin_ms: i64,
    pub end_ms: i64,
    /// The key is a UNIQ_KEY (message id as the producer saw it).
    pub unique: bool,
}

impl KeyQuery {
    /// Every message of `topic` with `key` among its KEYS, any time.
    pub fn by_key(topic: &str, key: &str) -> Self {
        Self {
            topic: topic.to_string(),
            key: key.to_string(),
            max_num: QUERY_MAX_NUM_DEFAULT,
            begin_ms: 0,
            end_ms: i64::MAX,
            unique: false,
        }
    }

    /// The message(s) of `topic` whose UNIQ_KEY is `key`.
    pub fn by_unique_key(topic: &str, key: &str) -> Self {
        Self {
            unique: true,
            ..Self::by_key(topic, key)
        }
    }

    fn matches(&self, message: &MessageExt) -> bool {
        if message.topic != self.topic {
            return false;
        }
        if self.unique {
            message.unique_key.as_deref() == Some(self.key.as_str())
        } else {
            message.keys.contains(&self.key)
        }
    }
}

impl Admin {
    /// VIEW_MESSAGE_BY_ID: the message with offset message id `msg_id`,
    /// read from the broker the id names. That broker must be one the name
    /// server lists: an id is input, and an id that is really a producer's
    /// unique key (same length, same hex) names an address nobody runs a
    /// broker on.
    pub async fn view_message(&self, msg_id: &str) -> Result<MessageExt, ClientError> {
        let id = decode_offset_msg_id(msg_id.trim())?;
        let addr = id.store_host.to_string();
        let listed = crate::admin::broker_entries(&self.cluster_info().await?);
        if !listed.iter().any(|broker| broker.addr == addr) {
            return Err(ClientError::InvalidArgument(format!(
                "{msg_id} names the store host {addr}, which is not a broker the name server lists"
            )));
        }
        let request = RemotingCommand::request(request_code::VIEW_MESSAGE_BY_ID)
            .with_ext("offset", id.commit_log_offset);
        let response = self.pool().invoke(&addr, request).await?;
        if response.code != response_code::SUCCESS {
            return Err(ClientError::from_response(&response));
        }
        decode_messages(&response.body, true)?
            .into_iter()
            .next()
            .ok_or_else(|| ClientError::Response {
                code: response_code::SYSTEM_ERROR,
                remark: format!("the broker returned no message for {msg_id}"),
            })
    }

    /// mqadmin's queryMsgById (Java's `viewMessage(topic, msgId)`): `id`
    /// as an offset message id of a listed broker, else as the producer's
    /// unique key within `topic` (the id a C++, Python or Java producer
    /// prints). Says which form matched; an empty list when neither did.
    pub async fn find_by_id(
        &self,
        id: &str,
        topic: Option<&str>,
    ) -> Result<(IdForm, Vec<MessageExt>), ClientError> {
        let as_offset = match self.view_message(id).await {
            Ok(message) => return Ok((IdForm::OffsetId, vec![message])),
            Err(err) => err,
        };
        let Some(topic) = topic else {
            // The reason alone: its own "invalid argument:" would be said twice.
            let reason = match as_offset {
                ClientError::InvalidArgument(reason) => reason,
                ClientError::Protocol(error) => error.to_string(),
                other => other.to_string(),
            };
            return Err(ClientError::InvalidArgument(format!(
                "{reason}; if {id} is a producer's message id (unique key), \
                 give its topic (-t TOPIC) to search for it"
            )));
        };
        let found = self
            .query_messages(&KeyQuery::by_unique_key(topic, id.trim()))
            .await?;
        Ok((IdForm::UniqueKey, found))
    }

    /// QUERY_MESSAGE on every master serving `query.topic`; the matching
    /// messages, newest first per broker. An empty list when none matches
    /// (every broker answered QUERY_NOT_FOUND).
    pub async fn query_messages(&self, query: &KeyQuery) -> Result<Vec<MessageExt>, ClientError> {
        let route = self.namesrv().fetch_route(&query.topic).await?;
        let mut found = Vec::new();
        for broker in &route.broker_datas {
            let Some(addr) = broker.master_addr() else {
                continue;
            };
            let mut request = RemotingCommand::request(request_code::QUERY_MESSAGE)
                .with_ext("topic", &query.topic)
                .with_ext("key", &query.key)
                .with_ext("maxNum", query.max_num)
                .with_ext("beginTimestamp", query.begin_ms)
                .with_ext(
                    "endTimestamp",
                    query.end_ms.min(now_ms().saturating_add(3_600_000)),
                );
            if query.unique {
                request.ext_fields.insert(UNIQUE_KEY_QUERY_FLAG, "true");
            }
            let response = self.pool().invoke(addr, request).await?;
            match response.code {
                response_code::SUCCESS => {
                    let messages = decode_messages(&response.body, true)?;
                    found.extend(messages.into_iter().filter(|m| query.matches(m)));
                }
                response_code::QUERY_NOT_FOUND => {}
                _ => return Err(ClientError::from_response(&response)),
            }
        }
        Ok(found)
    }

    /// The message at `offset` of queue `queue_id` of `topic` (one pull of
    /// one message; `None` when the offset holds none).
    pub async fn query_message_by_offset(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Result<Option<MessageExt>, ClientError> {
        let route = self.namesrv().fetch_route(topic).await?;
        for broker in &route.broker_datas {
            let serves = route
                .queue_datas
                .iter()
                .any(|q| q.broker_name == broker.broker_name && queue_id < q.read_queue_nums);
            let Some(addr) = broker.master_addr().filter(|_| serves) else {
                continue;
            };
            let header = PullMessageRequestHeader {
                consumer_group: TOOLS_GROUP.to_string(),
                topic: topic.to_string(),
                queue_id,
                queue_offset: offset,
                max_msg_nums: 1,
                sys_flag: pull_sys_flag::SUBSCRIPTION,
                commit_offset: 0,
                suspend_timeout_millis: Some(0),
                subscription: Some("*".to_string()),
                sub_version: Some(now_ms()),
                expression_type: Some("TAG".to_string()),
                max_msg_bytes: None,
            };
            let mut request = RemotingCommand::request(request_code::PULL_MESSAGE);
            request.ext_fields = header.to_ext();
            let response = self.pool().invoke(addr, request).await?;
            match response.code {
                response_code::SUCCESS => {
                    let message = decode_messages(&response.body, true)?
                        .into_iter()
                        .find(|m| m.queue_offset == offset);
                    return Ok(message);
                }
                response_code::PULL_NOT_FOUND
                | response_code::PULL_OFFSET_MOVED
                | response_code::PULL_RETRY_IMMEDIATELY => return Ok(None),
                _ => return Err(ClientError::from_response(&response)),
            }
        }
        Err(ClientError::NoRoute(format!("{topic} queue {queue_id}")))
    }
}
