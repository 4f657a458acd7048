//! CONSUMER_SEND_MSG_BACK (36; Java's `consumerSendMsgBack`): a consumer
//! that failed to consume a message hands it back by CommitLog offset. The
//! broker stores a copy for the group's retry topic `%RETRY%{group}`,
//! delayed by a delay level (header delayLevel, or 3 + reconsume times when
//! 0) through SCHEDULE_TOPIC_XXXX, with the reconsume count one higher.
//! Once the count reaches the group's `retryMaxTimes` (or the request asks
//! with a negative level) the copy goes to the dead-letter topic
//! `%DLQ%{group}` instead, at once.
//!
//! The copy keeps every property (UNIQ_KEY: the client sees the same
//! message id), gains RETRY_TOPIC = the original topic (kept from an
//! earlier retry) and ORIGIN_MESSAGE_ID = the first stored copy's offset
//! id. Clients put RETRY_TOPIC back as the topic when they consume it.

use std::rc::Rc;

use ferrocket_protocol::body::{perm, TopicConfig};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::record::{decode_record, NewRecord, RecordView};
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::Connection;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::append::{copy_of, tag_hash};
use crate::services::delivery::{redirect_delayed, schedule_tags_code};
use crate::services::records::try_read_record_through;
use crate::services::topics::{dlq_topic, retry_topic, TopicChange, DLQ_QUEUE_NUMS};
use crate::shard::Shard;

/// First request version whose maxReconsumeTimes header counts
/// (`MQVersion.Version.V3_4_9`).
pub const VERSION_WITH_MAX_RECONSUME_TIMES: i32 = 122;
/// Delay level of a retry whose request says 0: 3 + reconsume times.
pub const RETRY_DELAY_LEVEL_BASE: i32 = 3;

/// `ConsumerSendMsgBackRequestHeader`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SendBackHeader {
    offset: i64,
    group: String,
    delay_level: i32,
    max_reconsume_times: Option<i32>,
}

impl SendBackHeader {
    fn parse(request: &RemotingCommand) -> Result<Self, Reject> {
        let fields = &request.ext_fields;
        Ok(Self {
            offset: fields.required_i64("offset")?,
            group: fields.required("group")?.to_string(),
            delay_level: fields.required_i32("delayLevel")?,
            max_reconsume_times: fields.get_i32("maxReconsumeTimes")?,
        })
    }
}

/// The topic `name`, created by shard 0 as `change` when missing.
async fn ensure_topic(
    shard: &Shard,
    name: &str,
    change: TopicChange,
) -> Result<TopicConfig, Reject> {
    shard
        .ensure_topic(name, change)
        .await?
        .ok_or_else(|| Reject::system(format!("topic[{name}] not exist")))
}

/// CONSUMER_SEND_MSG_BACK.
pub(crate) async fn send_msg_back(
    shard: &Rc<Shard>,
    conn: &Connection,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = SendBackHeader::parse(request)?;
    refuse_on_slave(shard)?;
    let group = shard.find_or_create_group(&header.group).await?;
    let success = RemotingCommand::response_to(request, response_code::SUCCESS, None);
    if group.retry_queue_nums <= 0 {
        return Ok(success);
    }
    let retry_config = writable_retry_topic(shard, &header.group).await?;
    // A consumer may send back a message it read from object storage.
    let bytes = try_read_record_through(shard.store(), header.offset)
        .await?
        .ok_or_else(|| {
            Reject::system(format!("look message by offset failed, {}", header.offset))
        })?;
    let source = decode_record(&bytes, false).map_err(|err| {
        Reject::system(format!(
            "look message by offset failed, {}: {err}",
            header.offset
        ))
    })?;
    // The offset may name any topic's message: the caller must be allowed
    // to consume the one it names before it is copied where it consumes.
    crate::shard::access::check_stored(shard, conn, request, source.topic)?;
    let mut props = source.properties();
    if props.get(properties::RETRY_TOPIC).is_none() {
        props.insert(properties::RETRY_TOPIC, source.topic);
    }
    let max_times = match header.max_reconsume_times {
        Some(asked) if request.version >= VERSION_WITH_MAX_RECONSUME_TIMES => asked,
        _ => group.retry_max_times,
    };
    let to_dlq = source.reconsume_times >= max_times || header.delay_level < 0;
    let (topic, queue_id) = if to_dlq {
        dead_letter_target(shard, &header.group, &source, &mut props).await?
    } else {
        let queues = group.retry_queue_nums.min(retry_config.write_queue_nums);
        retry_target(shard, &header, &source, &mut props, queues)
    };
    if props
        .get(properties::ORIGIN_MESSAGE_ID)
        .is_none_or(|id| id.trim().is_empty())
    {
        props.insert(properties::ORIGIN_MESSAGE_ID, source.offset_msg_id());
    }
    let original = props
        .get(properties::RETRY_TOPIC)
        .unwrap_or(source.topic)
        .to_string();
    store_retry_copy(shard, &source, props, topic, queue_id).await?;
    if to_dlq {
        shard.metrics().count_dlq(&header.group, &original);
    }
    Ok(success)
}

/// A slave, acting master or not, stores no retry copy: Java's
/// `consumerSendMsgBack` finds no master beside it (`peekMasterBroker`) and
/// answers SYSTEM_ERROR, and the client then sends the retry message
/// through its own producer to a writable set.
fn refuse_on_slave(shard: &Shard) -> Result<(), Reject> {
    let config = shard.config();
    if !config.replication.broker_role.is_slave() {
        return Ok(());
    }
    let ip = config
        .advertised_ip()
        .map_or_else(|_| config.broker_ip1.clone(), |ip| ip.to_string());
    Err(Reject::system(format!(
        "no master available along with {ip}"
    )))
}

/// The group's retry topic (made by shard 0 when missing), if writable.
async fn writable_retry_topic(shard: &Shard, group: &str) -> Result<TopicConfig, Reject> {
    let retry = retry_topic(group);
    let change = TopicChange::EnsureRetry {
        group: group.to_string(),
    };
    let config = ensure_topic(shard, &retry, change).await?;
    if !perm::is_writeable(config.perm) {
        return Err(Reject::new(
            response_code::NO_PERMISSION,
            format!("the topic[{retry}] sending message is forbidden"),
        ));
    }
    Ok(config)
}

/// The group's dead-letter topic (made when missing), queue 0, at once.
async fn dead_letter_target(
    shard: &Shard,
    group: &str,
    source: &RecordView<'_>,
    props: &mut Properties,
) -> Result<(String, i32), Reject> {
    let dlq = dlq_topic(group);
    let config = TopicConfig {
        perm: perm::READ_WRITE,
        ..TopicConfig::new(&dlq, DLQ_QUEUE_NUMS)
    };
    ensure_topic(shard, &dlq, TopicChange::Upsert(config)).await?;
    props.remove(properties::DELAY);
    tracing::info!(%group, topic = %source.topic,
        reconsume_times = source.reconsume_times, "message sent to the DLQ");
    Ok((dlq, 0))
}

/// A retry queue of the group, delayed by the asked level (or
/// [`RETRY_DELAY_LEVEL_BASE`] + reconsume times when it asks 0).
fn retry_target(
    shard: &Shard,
    header: &SendBackHeader,
    source: &RecordView<'_>,
    props: &mut Properties,
    queues: i32,
) -> (String, i32) {
    let level = if header.delay_level == 0 {
        RETRY_DELAY_LEVEL_BASE + source.reconsume_times
    } else {
        header.delay_level
    };
    props.insert(properties::DELAY, level.to_string());
    let queue_id = shard.random_below(queues.max(1));
    (retry_topic(&header.group), queue_id)
}

/// Stores the copy (through the delay-level topic when delayed) with the
/// reconsume count one higher.
async fn store_retry_copy(
    shard: &Shard,
    source: &RecordView<'_>,
    mut props: Properties,
    topic: String,
    queue_id: i32,
) -> Result<(), Reject> {
    let levels = &shard.schedule().levels;
    let redirect = redirect_delayed(levels, &mut props, &topic, queue_id, source.sys_flag);
    let (store_topic, store_queue) = match redirect {
        Some(r) => (r.topic.to_string(), r.queue_id),
        None => (topic, queue_id),
    };
    let now = now_ms();
    let tags = schedule_tags_code(levels, &store_topic, store_queue, now)
        .unwrap_or_else(|| tag_hash(&props));
    let props_bytes = props.to_bytes();
    let store = (now, shard.env().store_host);
    let record = NewRecord {
        reconsume_times: source.reconsume_times.saturating_add(1),
        prepared_transaction_offset: 0,
        ..copy_of(source, &store_topic, store_queue, &props_bytes, store)
    };
    let result = shard.store_record(&record, tags).await?;
    let code = result.status.response_code();
    if code != response_code::SUCCESS {
        return Err(Reject::system(format!(
            "storing the retry message answered {code}"
        )));
    }
    Ok(())
}
