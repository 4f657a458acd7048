//! Pull consumer (Java's `DefaultMQPullConsumer` / `PullAPIWrapper`):
//! explicit pulls by queue and offset, consumer offsets, queue offsets, and
//! the heartbeat that registers the group and its subscriptions.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use ferrocket_protocol::body::{
    encode_json, ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData, MessageModel,
    SubscriptionData,
};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{
    OffsetResponseHeader, QueryConsumerOffsetRequestHeader, QueueRequestHeader,
    SearchOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use ferrocket_protocol::properties::java_string_hash;
use ferrocket_protocol::RemotingCommand;

use crate::connection::{ConnectionConfig, RequestHandler};
use crate::error::expect_success;
use crate::message::{MessageExt, TagFilter};
use crate::namesrv::{NameServerClient, ROUTE_TTL_MS_DEFAULT};
use crate::pool::ConnectionPool;
use crate::producer::{client_links, now_ms};
use crate::route::MessageQueue;
use crate::ClientError;

/// Most messages one pull may ask for (Java caps `pullBatchSize` at 1024).
pub const PULL_MSG_NUMS_MAX: i32 = 1024;
/// Added to a long-poll's suspend time for the request timeout, so the
/// broker's "nothing new" answer arrives before we give up.
pub const PULL_TIMEOUT_MARGIN_MS: u64 = 5_000;
/// Broker suspend time of a long poll in Java (`brokerSuspendMaxTimeMillis`).
pub const LONG_POLL_SUSPEND_MS_DEFAULT: u64 = 15_000;

/// Consumer settings.
#[derive(Debug, Clone)]
pub struct PullConsumerConfig {
    pub group: String,
    /// Name servers, "host:port;host:port".
    pub namesrv_addr: String,
    pub connection: ConnectionConfig,
    /// Check each pulled body's CRC.
    pub verify_crc: bool,
    /// Where a group without a committed offset starts (sent in heartbeats).
    pub consume_from_where: ConsumeFromWhere,
    pub message_model: MessageModel,
    /// Address in the client id; found from the route to the name server
    /// when `None`.
    pub client_ip: Option<IpAddr>,
    pub route_ttl_ms: u64,
}

impl PullConsumerConfig {
    pub fn new(group: impl Into<String>, namesrv_addr: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            namesrv_addr: namesrv_addr.into(),
            connection: ConnectionConfig::default(),
            verify_crc: true,
            consume_from_where: ConsumeFromWhere::LastOffset,
            message_model: MessageModel::Clustering,
            client_ip: None,
            route_ttl_ms: ROUTE_TTL_MS_DEFAULT,
        }
    }
}

/// What a pull found (Java's `PullStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullStatus {
    Found,
    NoNewMsg,
    NoMatchedMsg,
    OffsetIllegal,
}

/// The answer to a pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullResult {
    pub status: PullStatus,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
    pub suggest_which_broker_id: i64,
    /// Messages matching the subscription (tags filtered again locally, as
    /// the broker filters by tag hash only).
    pub messages: Vec<MessageExt>,
}

/// A pull consumer; share it behind an `Arc`, every method takes `&self`.
pub struct PullConsumer {
    config: PullConsumerConfig,
    pool: ConnectionPool,
    namesrv: NameServerClient,
    client_id: String,
    /// Topic -> subscription expression, for heartbeats.
    subscriptions: Mutex<BTreeMap<String, String>>,
}

impl std::fmt::Debug for PullConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PullConsumer")
            .field("group", &self.config.group)
            .field("client_id", &self.client_id)
            .finish()
    }
}

impl PullConsumer {
    pub fn new(config: PullConsumerConfig) -> Result<Self, ClientError> {
        Self::with_handler(config, None)
    }

    /// `handler` answers requests brokers send (NOTIFY_CONSUMER_IDS_CHANGED,
    /// GET_CONSUMER_RUNNING_INFO, ...); without one, two-way requests are
    /// answered REQUEST_CODE_NOT_SUPPORTED and oneway ones ignored.
    pub fn with_handler(
        config: PullConsumerConfig,
        handler: Option<RequestHandler>,
    ) -> Result<Self, ClientError> {
        if config.group.is_empty() {
            return Err(ClientError::InvalidArgument(
                "the consumer group is empty".into(),
            ));
        }
        let (pool, namesrv, ip) = client_links(
            &config.connection,
            &config.namesrv_addr,
            config.route_ttl_ms,
            config.client_ip,
            handler,
        )?;
        Ok(Self {
            client_id: format!("{ip}@{}", std::process::id()),
            config,
            pool,
            namesrv,
            subscriptions: Mutex::new(BTreeMap::new()),
        })
    }

    pub fn config(&self) -> &PullConsumerConfig {
        &self.config
    }

    pub fn namesrv(&self) -> &NameServerClient {
        &self.namesrv
    }

    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// Records a subscription sent with every [`PullConsumer::heartbeat`].
    pub fn subscribe(&self, topic: &str, expression: &str) {
        self.subscriptions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(topic.to_string(), expression.to_string());
    }

    /// Queues of `topic` to read.
    pub async fn read_queues(&self, topic: &str) -> Result<Vec<MessageQueue>, ClientError> {
        self.namesrv.read_queues(topic).await
    }

    pub(crate) async fn broker_addr(&self, queue: &MessageQueue) -> Result<String, ClientError> {
        if let Some(addr) = self.namesrv.master_addr(&queue.broker_name) {
            return Ok(addr);
        }
        // Loading the topic's route teaches the broker table its brokers.
        self.namesrv.route(&queue.topic).await?;
        self.namesrv.find_master_addr(&queue.broker_name).await
    }

    /// Pulls up to `max_nums` messages of `queue` from `offset`. With
    /// `suspend`, the broker holds the request that long when there is
    /// nothing new (long polling).
    pub async fn pull(
        &self,
        queue: &MessageQueue,
        offset: i64,
        max_nums: i32,
        expression: &str,
        suspend: Option<Duration>,
    ) -> Result<PullResult, ClientError> {
        let filter = TagFilter::parse(expression);
        let subscription = if filter.matches_all() {
            "*"
        } else {
            expression.trim()
        };
        let mut result = self
            .pull_with_expression(queue, offset, max_nums, subscription, "TAG", suspend)
            .await?;
        result
            .messages
            .retain(|m| filter.matches(m.tags.as_deref()));
        Ok(result)
    }

    /// The group's committed offset of `queue`; `None` when none is stored.
    pub async fn query_consumer_offset(
        &self,
        queue: &MessageQueue,
    ) -> Result<Option<i64>, ClientError> {
        let header = QueryConsumerOffsetRequestHeader {
            consumer_group: self.config.group.clone(),
            topic: queue.topic.clone(),
            queue_id: queue.queue_id,
            set_zero_if_not_found: None,
        };
        let mut request = RemotingCommand::request(request_code::QUERY_CONSUMER_OFFSET);
        request.ext_fields = header.to_ext();
        let addr = self.broker_addr(queue).await?;
        let response = self.pool.invoke(&addr, request).await?;
        if response.code == response_code::QUERY_NOT_FOUND {
            return Ok(None);
        }
        let response = expect_success(response)?;
        Ok(Some(
            OffsetResponseHeader::from_ext(&response.ext_fields)?.offset,
        ))
    }

    fn update_offset_request(&self, queue: &MessageQueue, offset: i64) -> RemotingCommand {
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: self.config.group.clone(),
            topic: queue.topic.clone(),
            queue_id: queue.queue_id,
            commit_offset: offset,
        };
        let mut request = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET);
        request.ext_fields = header.to_ext();
        request
    }

    /// Commits the group's offset of `queue` and waits for the broker.
    pub async fn update_consumer_offset(
        &self,
        queue: &MessageQueue,
        offset: i64,
    ) -> Result<(), ClientError> {
        let addr = self.broker_addr(queue).await?;
        let request = self.update_offset_request(queue, offset);
        expect_success(self.pool.invoke(&addr, request).await?)?;
        Ok(())
    }

    /// Commits the group's offset of `queue` oneway (as Java does).
    pub async fn update_consumer_offset_oneway(
        &self,
        queue: &MessageQueue,
        offset: i64,
    ) -> Result<(), ClientError> {
        let addr = self.broker_addr(queue).await?;
        self.pool
            .invoke_oneway(&addr, self.update_offset_request(queue, offset))
            .await
    }

    async fn queue_offset(&self, code: i32, queue: &MessageQueue) -> Result<i64, ClientError> {
        let header = QueueRequestHeader {
            topic: queue.topic.clone(),
            queue_id: queue.queue_id,
        };
        let mut request = RemotingCommand::request(code);
        request.ext_fields = header.to_ext();
        let addr = self.broker_addr(queue).await?;
        let response = expect_success(self.pool.invoke(&addr, request).await?)?;
        Ok(OffsetResponseHeader::from_ext(&response.ext_fields)?.offset)
    }

    /// Smallest queue offset still stored (GET_MIN_OFFSET).
    pub async fn min_offset(&self, queue: &MessageQueue) -> Result<i64, ClientError> {
        self.queue_offset(request_code::GET_MIN_OFFSET, queue).await
    }

    /// Offset after the last message of the queue (GET_MAX_OFFSET).
    pub async fn max_offset(&self, queue: &MessageQueue) -> Result<i64, ClientError> {
        self.queue_offset(request_code::GET_MAX_OFFSET, queue).await
    }

    /// First queue offset stored at or after `timestamp_ms`.
    pub async fn search_offset(
        &self,
        queue: &MessageQueue,
        timestamp_ms: i64,
    ) -> Result<i64, ClientError> {
        let header = SearchOffsetRequestHeader {
            topic: queue.topic.clone(),
            queue_id: queue.queue_id,
            timestamp: timestamp_ms,
        };
        let mut request = RemotingCommand::request(request_code::SEARCH_OFFSET_BY_TIMESTAMP);
        request.ext_fields = header.to_ext();
        let addr = self.broker_addr(queue).await?;
        let response = expect_success(self.pool.invoke(&addr, request).await?)?;
        Ok(OffsetResponseHeader::from_ext(&response.ext_fields)?.offset)
    }

    /// The heartbeat body: this group and its subscriptions.
    pub fn heartbeat_data(&self) -> HeartbeatData {
        let subscriptions = self
            .subscriptions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        let version = now_ms();
        let subscription_data_set = subscriptions
            .iter()
            .map(|(topic, expression)| {
                let filter = TagFilter::parse(expression);
                let tags = filter.tags();
                SubscriptionData {
                    topic: topic.clone(),
                    sub_string: if filter.matches_all() {
                        "*".into()
                    } else {
                        expression.trim().into()
                    },
                    sub_version: version,
                    class_filter_mode: false,
                    code_set: tags.iter().map(|t| java_string_hash(t).into()).collect(),
                    tags_set: tags,
                    expression_type: Some("TAG".to_string()),
                }
            })
            .collect();
        HeartbeatData {
            client_id: self.client_id.clone(),
            producer_data_set: Vec::new(),
            consumer_data_set: vec![ConsumerData {
                group_name: self.config.group.clone(),
                consume_type: ConsumeType::Pull,
                message_model: self.config.message_model,
                consume_from_where: self.config.consume_from_where,
                subscription_data_set,
                unit_mode: false,
            }],
        }
    }

    /// HEART_BEAT to every broker serving a subscribed topic; returns the
    /// addresses reached.
    pub async fn heartbeat(&self) -> Result<Vec<String>, ClientError> {
        let topics: Vec<String> = self
            .subscriptions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .keys()
            .cloned()
            .collect();
        let mut addrs = BTreeSet::new();
        for topic in &topics {
            let route = self.namesrv.route(topic).await?;
            for broker in &route.broker_datas {
                addrs.extend(broker.broker_addrs.values().cloned());
            }
        }
        let body = Bytes::from(encode_json(&self.heartbeat_data()));
        for addr in &addrs {
            let request =
                RemotingCommand::request(request_code::HEART_BEAT).with_body(body.clone());
            expect_success(self.pool.invoke(addr, request).await?)?;
        }
        Ok(addrs.into_iter().collect())
    }

    /// Closes every connection.
    pub fn shutdown(&self) {
        self.pool.close_all();
    }
}
