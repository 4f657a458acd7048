//! Producer (Java's `DefaultMQProducer`, sync and oneway sends, batches).
//!
//! Queues come from the name server route of the topic. A topic without a
//! route is sent through the route of the template topic (TBW102) with
//! `defaultTopic` in the header, so a broker with auto-creation on creates
//! it, as the Java producer does.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use ferrocket_protocol::batch::encode_batch_item;
use ferrocket_protocol::body::{encode_json, HeartbeatData, ProducerData};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{SendMessageRequestHeader, SendMessageResponseHeader};
use ferrocket_protocol::limits::{
    validate_topic, BATCH_MESSAGES_MAX, MESSAGE_BODY_BYTES_MAX_DEFAULT,
};
use ferrocket_protocol::message_id::UniqueKeyGenerator;
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::RemotingCommand;

use crate::admin::DEFAULT_TOPIC;
use crate::connection::{ConnectionConfig, RequestHandler};
use crate::namesrv::{is_topic_not_exist, NameServerClient, ROUTE_TTL_MS_DEFAULT};
use crate::pool::ConnectionPool;
use crate::route::{self, MessageQueue};
use crate::send::{
    message_properties, send_header_ext, BatchMessage, QueueSelector, SendOptions, SendResult,
    SendStatus, SendVersion,
};
use crate::ClientError;

/// Queues an auto-created topic gets by default (`defaultTopicQueueNums`).
pub const DEFAULT_TOPIC_QUEUE_NUMS: i32 = 4;
/// Extra attempts on another queue after a failed send (Java: 2).
pub const SEND_RETRY_TIMES_DEFAULT: u32 = 2;
/// While a topic has no route, how long the template route is used before
/// the name server is asked again.
const MISSING_ROUTE_RECHECK_MS: u64 = 1_000;

/// Producer settings.
#[derive(Debug, Clone)]
pub struct ProducerConfig {
    pub group: String,
    /// Name servers, "host:port;host:port".
    pub namesrv_addr: String,
    pub connection: ConnectionConfig,
    pub send_version: SendVersion,
    pub send_timeout_ms: u64,
    /// Extra attempts on another queue after a transport failure or a
    /// retryable answer (not when the caller picked the queue).
    pub retry_times: u32,
    /// Template topic for topics without a route (TBW102).
    pub default_topic: String,
    pub default_topic_queue_nums: i32,
    /// Largest body (or batch body) accepted.
    pub max_message_bytes: usize,
    /// Address put into unique keys; found from the route to the name
    /// server when `None`.
    pub client_ip: Option<IpAddr>,
    pub route_ttl_ms: u64,
}

impl ProducerConfig {
    pub fn new(group: impl Into<String>, namesrv_addr: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            namesrv_addr: namesrv_addr.into(),
            connection: ConnectionConfig::default(),
            send_version: SendVersion::V2,
            send_timeout_ms: crate::connection::REQUEST_TIMEOUT_MS_DEFAULT,
            retry_times: SEND_RETRY_TIMES_DEFAULT,
            default_topic: DEFAULT_TOPIC.to_string(),
            default_topic_queue_nums: DEFAULT_TOPIC_QUEUE_NUMS,
            max_message_bytes: MESSAGE_BODY_BYTES_MAX_DEFAULT,
            client_ip: None,
            route_ttl_ms: ROUTE_TTL_MS_DEFAULT,
        }
    }
}

/// A producer; share it behind an `Arc`, every method takes `&self`.
#[derive(Debug)]
pub struct Producer {
    config: ProducerConfig,
    pool: ConnectionPool,
    namesrv: NameServerClient,
    client_ip: IpAddr,
    unique_keys: Mutex<UniqueKeyGenerator>,
    rotation: AtomicUsize,
    /// Topics without a route, until when the template route stands in.
    missing_routes: Mutex<HashMap<String, Instant>>,
}

/// Wall-clock milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The local address used to reach `addr` (a UDP "connect" sends nothing).
pub(crate) fn local_ip_towards(addr: &str) -> IpAddr {
    let probe = || -> std::io::Result<IpAddr> {
        let socket = UdpSocket::bind("0.0.0.0:0")?;
        socket.connect(addr)?;
        Ok(socket.local_addr()?.ip())
    };
    match probe() {
        Ok(ip) if !ip.is_unspecified() => ip,
        _ => IpAddr::V4(Ipv4Addr::LOCALHOST),
    }
}

/// What a producer or consumer runs on: a connection pool (with `handler`
/// for requests brokers send), a name-server client caching routes
/// `route_ttl_ms`, and the client IP (`client_ip`, else the local address
/// towards the first name server).
pub(crate) fn client_links(
    connection: &ConnectionConfig,
    namesrv_addr: &str,
    route_ttl_ms: u64,
    client_ip: Option<IpAddr>,
    handler: Option<RequestHandler>,
) -> Result<(ConnectionPool, NameServerClient, IpAddr), ClientError> {
    let pool = ConnectionPool::new(connection.clone(), handler);
    let namesrv = NameServerClient::with_route_ttl(
        namesrv_addr,
        pool.clone(),
        Duration::from_millis(route_ttl_ms),
    )?;
    let ip = client_ip.unwrap_or_else(|| local_ip_towards(&namesrv.addrs()[0]));
    Ok((pool, namesrv, ip))
}

/// A per-process random number (stands in for Java's class-loader hash).
pub(crate) fn instance_hash() -> i32 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(now_ms() as u128);
    hasher.finish() as i32
}

fn is_retryable_code(code: i32) -> bool {
    matches!(
        code,
        response_code::TOPIC_NOT_EXIST
            | response_code::SERVICE_NOT_AVAILABLE
            | response_code::SYSTEM_ERROR
            | response_code::SYSTEM_BUSY
            | response_code::NO_PERMISSION
    )
}

impl Producer {
    pub fn new(config: ProducerConfig) -> Result<Self, ClientError> {
        Self::with_handler(config, None)
    }

    /// `handler` answers requests brokers send (CHECK_TRANSACTION_STATE,
    /// ...); without one, two-way requests are answered
    /// REQUEST_CODE_NOT_SUPPORTED and oneway ones ignored.
    pub fn with_handler(
        config: ProducerConfig,
        handler: Option<RequestHandler>,
    ) -> Result<Self, ClientError> {
        if config.group.is_empty() {
            return Err(ClientError::InvalidArgument(
                "the producer group is empty".into(),
            ));
        }
        let (pool, namesrv, client_ip) = client_links(
            &config.connection,
            &config.namesrv_addr,
            config.route_ttl_ms,
            config.client_ip,
            handler,
        )?;
        let generator = UniqueKeyGenerator::new(client_ip, std::process::id(), instance_hash());
        Ok(Self {
            config,
            pool,
            namesrv,
            client_ip,
            unique_keys: Mutex::new(generator),
            rotation: AtomicUsize::new(0),
            missing_routes: Mutex::new(HashMap::new()),
        })
    }

    pub fn config(&self) -> &ProducerConfig {
        &self.config
    }

    pub fn namesrv(&self) -> &NameServerClient {
        &self.namesrv
    }

    /// Client id announced in heartbeats ("ip@pid").
    pub fn client_id(&self) -> String {
        format!("{}@{}", self.client_ip, std::process::id())
    }

    fn next_unique_key(&self) -> String {
        let mut generator = self
            .unique_keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        generator.next_key(now_ms())
    }

    /// Queues `topic` is written to; the template topic's (limited to
    /// `default_topic_queue_nums` per broker) while it has no route.
    pub async fn write_queues(&self, topic: &str) -> Result<Vec<MessageQueue>, ClientError> {
        let missing = {
            let mut missing = self
                .missing_routes
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            match missing.get(topic) {
                Some(until) if Instant::now() < *until => true,
                Some(_) => {
                    missing.remove(topic);
                    false
                }
                None => false,
            }
        };
        if !missing {
            match self.namesrv.route(topic).await {
                Ok(route) => {
                    let queues = route::write_queues(topic, &route);
                    if !queues.is_empty() {
                        return Ok(queues);
                    }
                }
                Err(error) if is_topic_not_exist(&error) => {}
                Err(error) => return Err(error),
            }
            self.missing_routes
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .insert(
                    topic.to_string(),
                    Instant::now() + Duration::from_millis(MISSING_ROUTE_RECHECK_MS),
                );
        }
        let template = match self.namesrv.route(&self.config.default_topic).await {
            Ok(route) => route,
            Err(error) if is_topic_not_exist(&error) => {
                return Err(ClientError::NoRoute(topic.to_string()))
            }
            Err(error) => return Err(error),
        };
        let per_broker = usize::try_from(self.config.default_topic_queue_nums).unwrap_or(1);
        let queues = route::write_queues_limited(topic, &template, per_broker);
        if queues.is_empty() {
            return Err(ClientError::NoRoute(topic.to_string()));
        }
        Ok(queues)
    }

    fn check_body(&self, body_len: usize) -> Result<(), ClientError> {
        if body_len == 0 {
            return Err(ClientError::InvalidArgument(
                "the message body is empty".into(),
            ));
        }
        if body_len > self.config.max_message_bytes {
            return Err(ClientError::InvalidArgument(format!(
                "the message body of {body_len} bytes exceeds the limit of {} bytes",
                self.config.max_message_bytes
            )));
        }
        Ok(())
    }

    fn header(
        &self,
        queue: &MessageQueue,
        properties: String,
        flag: i32,
        batch: bool,
    ) -> SendMessageRequestHeader {
        SendMessageRequestHeader {
            producer_group: self.config.group.clone(),
            topic: queue.topic.clone(),
            default_topic: Some(self.config.default_topic.clone()),
            default_topic_queue_nums: Some(self.config.default_topic_queue_nums),
            queue_id: Some(queue.queue_id),
            sys_flag: Some(0),
            born_timestamp: Some(now_ms()),
            flag: Some(flag),
            properties: Some(properties),
            reconsume_times: Some(0),
            unit_mode: false,
            max_reconsume_times: None,
            batch,
            broker_name: Some(queue.broker_name.clone()),
        }
    }

    fn request(
        &self,
        code: i32,
        header: &SendMessageRequestHeader,
        body: Bytes,
    ) -> RemotingCommand {
        let mut request = RemotingCommand::request(code);
        request.ext_fields = send_header_ext(header, self.config.send_version);
        request.body = body;
        request
    }

    /// Checks one message to send and builds its properties, with a fresh
    /// UNIQ_KEY (returned too).
    fn prepare_single(
        &self,
        topic: &str,
        body_len: usize,
        options: &SendOptions,
    ) -> Result<(String, Properties), ClientError> {
        validate_topic(topic)?;
        self.check_body(body_len)?;
        let unique_key = self.next_unique_key();
        let props = message_properties(
            options.tags.as_deref(),
            &options.keys,
            &options.properties,
            options.delay_level,
            options.wait_store_msg_ok,
            &unique_key,
        )?;
        Ok((unique_key, props))
    }

    /// SEND_MESSAGE or SEND_MESSAGE_V2, as configured.
    fn single_send_code(&self) -> i32 {
        match self.config.send_version {
            SendVersion::V1 => request_code::SEND_MESSAGE,
            SendVersion::V2 => request_code::SEND_MESSAGE_V2,
        }
    }

    /// Sends one message and waits for the broker's answer.
    pub async fn send(
        &self,
        topic: &str,
        body: impl Into<Bytes>,
        options: &SendOptions,
    ) -> Result<SendResult, ClientError> {
        let body = body.into();
        let (unique_key, props) = self.prepare_single(topic, body.len(), options)?;
        let code = self.single_send_code();
        let encoded = props.to_encoded_string();
        self.send_with_retries(topic, &options.effective_selector(), unique_key, |queue| {
            let header = self.header(queue, encoded.clone(), options.flag, false);
            self.request(code, &header, body.clone())
        })
        .await
    }

    /// Sends one message oneway: no answer, no retry.
    pub async fn send_oneway(
        &self,
        topic: &str,
        body: impl Into<Bytes>,
        options: &SendOptions,
    ) -> Result<(), ClientError> {
        let body = body.into();
        let (_, props) = self.prepare_single(topic, body.len(), options)?;
        let queues = self.write_queues(topic).await?;
        let rotation = self.rotation.fetch_add(1, Ordering::Relaxed);
        let queue = options.effective_selector().select(&queues, rotation)?;
        let addr = self.namesrv.find_master_addr(&queue.broker_name).await?;
        let code = self.single_send_code();
        let header = self.header(&queue, props.to_encoded_string(), options.flag, false);
        self.pool
            .invoke_oneway(&addr, self.request(code, &header, body))
            .await
    }

    /// Sends messages to one queue in one SEND_BATCH_MESSAGE request. The
    /// result's `msg_id` and `unique_key` list every message, comma
    /// separated; `queue_offset` is the first message's.
    pub async fn send_batch(
        &self,
        topic: &str,
        messages: &[BatchMessage],
        selector: &QueueSelector,
    ) -> Result<SendResult, ClientError> {
        validate_topic(topic)?;
        if messages.is_empty() || messages.len() > BATCH_MESSAGES_MAX {
            return Err(ClientError::InvalidArgument(format!(
                "a batch holds 1..={BATCH_MESSAGES_MAX} messages, not {}",
                messages.len()
            )));
        }
        let mut body = BytesMut::new();
        let mut unique_keys = Vec::with_capacity(messages.len());
        for message in messages {
            if message.body.is_empty() {
                return Err(ClientError::InvalidArgument(
                    "a batch message body is empty".into(),
                ));
            }
            let unique_key = self.next_unique_key();
            let props = message_properties(
                message.tags.as_deref(),
                &message.keys,
                &message.properties,
                None,
                true,
                &unique_key,
            )?;
            encode_batch_item(message.flag, &message.body, &props.to_bytes(), &mut body)?;
            unique_keys.push(unique_key);
        }
        self.check_body(body.len())?;
        let body = body.freeze();
        let mut batch_props = Properties::new();
        batch_props.insert(properties::WAIT, "true");
        let encoded = batch_props.to_encoded_string();
        self.send_with_retries(topic, selector, unique_keys.join(","), |queue| {
            let header = self.header(queue, encoded.clone(), 0, true);
            self.request(request_code::SEND_BATCH_MESSAGE, &header, body.clone())
        })
        .await
    }

    async fn send_with_retries(
        &self,
        topic: &str,
        selector: &QueueSelector,
        unique_key: String,
        make_request: impl Fn(&MessageQueue) -> RemotingCommand,
    ) -> Result<SendResult, ClientError> {
        let attempts = if selector.is_explicit() {
            1
        } else {
            1 + self.config.retry_times
        };
        let timeout = Duration::from_millis(self.config.send_timeout_ms);
        let mut last_error = None;
        let mut last_broker: Option<String> = None;
        for attempt in 0..attempts {
            let queues = self.write_queues(topic).await?;
            let mut queue =
                selector.select(&queues, self.rotation.fetch_add(1, Ordering::Relaxed))?;
            // On a retry, prefer a queue of another broker (Java does too).
            if let (Some(failed), false) = (&last_broker, selector.is_explicit()) {
                if let Some(other) = queues.iter().find(|q| &q.broker_name != failed) {
                    if &queue.broker_name == failed {
                        queue = other.clone();
                    }
                }
            }
            let addr = match self.namesrv.find_master_addr(&queue.broker_name).await {
                Ok(addr) => addr,
                Err(error) => {
                    last_error = Some(error);
                    last_broker = Some(queue.broker_name.clone());
                    continue;
                }
            };
            let outcome = self
                .pool
                .invoke_timeout(&addr, make_request(&queue), timeout)
                .await
                .and_then(|response| send_result(response, &queue, &addr, &unique_key));
            match outcome {
                Ok(result) => return Ok(result),
                Err(error) => {
                    let retry = error.is_transport()
                        || error.response_code().is_some_and(is_retryable_code);
                    tracing::debug!(%topic, %addr, attempt, %error, retry, "send failed");
                    if !retry {
                        return Err(error);
                    }
                    if error.is_transport() {
                        self.namesrv.invalidate(topic);
                    }
                    last_error = Some(error);
                    last_broker = Some(queue.broker_name.clone());
                }
            }
        }
        Err(last_error.unwrap_or_else(|| ClientError::NoRoute(topic.to_string())))
    }

    /// HEART_BEAT with this producer's group to every broker seen so far.
    pub async fn heartbeat(&self) -> Result<(), ClientError> {
        let data = HeartbeatData {
            client_id: self.client_id(),
            producer_data_set: vec![ProducerData {
                group_name: self.config.group.clone(),
            }],
            consumer_data_set: Vec::new(),
        };
        let body = Bytes::from(encode_json(&data));
        for addrs in self.namesrv.known_brokers().values() {
            for addr in addrs.values() {
                let request =
                    RemotingCommand::request(request_code::HEART_BEAT).with_body(body.clone());
                crate::error::expect_success(self.pool.invoke(addr, request).await?)?;
            }
        }
        Ok(())
    }

    /// Closes every connection.
    pub fn shutdown(&self) {
        self.pool.close_all();
    }
}

/// Reads a send response (Java `processSendResponse`).
fn send_result(
    response: RemotingCommand,
    queue: &MessageQueue,
    addr: &str,
    unique_key: &str,
) -> Result<SendResult, ClientError> {
    let status = match response.code {
        response_code::SUCCESS => SendStatus::SendOk,
        response_code::FLUSH_DISK_TIMEOUT => SendStatus::FlushDiskTimeout,
        response_code::FLUSH_SLAVE_TIMEOUT => SendStatus::FlushSlaveTimeout,
        response_code::SLAVE_NOT_AVAILABLE => SendStatus::SlaveNotAvailable,
        _ => return Err(ClientError::from_response(&response)),
    };
    let header = SendMessageResponseHeader::from_ext(&response.ext_fields)?;
    Ok(SendResult {
        status,
        msg_id: header.msg_id,
        unique_key: unique_key.to_string(),
        topic: queue.topic.clone(),
        broker_name: queue.broker_name.clone(),
        queue_id: header.queue_id,
        queue_offset: header.queue_offset,
        transaction_id: header.transaction_id,
        broker_addr: addr.to_string(),
        recall_handle: header.recall_handle,
    })
}
