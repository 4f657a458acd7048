//! SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320)
//! (`SendMessageProcessor`). The record is encoded (CRC included) on the
//! shard that received it and handed to the CommitLog appender; the queue's
//! owner shard hears about it through the appender's dispatch.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use bytes::BytesMut;
use ferrocket_protocol::batch::decode_batch;
use ferrocket_protocol::body::{perm, TopicConfig};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::{SendMessageRequestView, SendMessageResponseHeader};
use ferrocket_protocol::limits::{validate_topic, PROPERTIES_BYTES_MAX};
use ferrocket_protocol::message_id::offset_msg_id;
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::record::{sys_flag, NewRecord};
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::Connection;
use ferrocket_store::{AppendRequest, AppendResult};

use crate::clock::now_ms;
use crate::config::BrokerConfig;
use crate::error::Reject;
use crate::services::append::{encode_into, tag_hash};
use crate::services::delivery::{redirect_delayed, schedule_tags_code};
use crate::services::metrics::MessageType;
use crate::services::priority;
use crate::services::topics::{self, RETRY_TOPIC_PREFIX, TBW102};
use crate::services::{recall, routing};
use crate::shard::replication::wait_store_ok;
use crate::shard::Shard;

mod plain;
use plain::SendProps;

/// What a send needs from its topic's config (copied out, not cloned).
#[derive(Debug, Clone, Copy)]
struct SendTopic {
    perm: i32,
    read_queue_nums: i32,
    write_queue_nums: i32,
}

impl SendTopic {
    fn of(config: &TopicConfig) -> Self {
        Self {
            perm: config.perm,
            read_queue_nums: config.read_queue_nums,
            write_queue_nums: config.write_queue_nums,
        }
    }
}

/// Finds the topic for a send (named `header.topic`), auto-creating it
/// from its template when allowed, and checks that it takes writes
/// (`msgCheck`).
async fn topic_for_send(
    shard: &Shard,
    header: &SendMessageRequestView<'_>,
) -> Result<SendTopic, Reject> {
    let topic = header.topic;
    validate_topic(topic)
        .map_err(|e| Reject::new(response_code::MESSAGE_ILLEGAL, e.to_string()))?;
    if topics::is_send_forbidden(topic) {
        return Err(Reject::new(
            response_code::NO_PERMISSION,
            format!("Sending message to topic[{topic}] is forbidden."),
        ));
    }
    let config = match shard.with_topic(topic, SendTopic::of) {
        Some(config) => config,
        None => {
            let template = header
                .default_topic
                .filter(|t| !t.is_empty())
                .unwrap_or(TBW102);
            let queue_nums = header
                .default_topic_queue_nums
                .unwrap_or(shard.config().default_topic_queue_nums);
            let create = topics::creation_for_send(topic, template, queue_nums);
            match shard.change_topic(create).await? {
                Some(config) => SendTopic::of(&config),
                None => {
                    return Err(Reject::new(
                        response_code::TOPIC_NOT_EXIST,
                        format!("topic[{topic}] not exist, apply first please!"),
                    ))
                }
            }
        }
    };
    if !perm::is_writeable(config.perm) {
        return Err(Reject::new(
            response_code::NO_PERMISSION,
            format!("the topic[{topic}] sending message is forbidden"),
        ));
    }
    Ok(config)
}

/// The queue a send goes to: the requested one, or a random writable one
/// when it asks for none (negative id).
fn choose_queue(
    shard: &Shard,
    header: &SendMessageRequestView<'_>,
    topic: &SendTopic,
) -> Result<i32, Reject> {
    let requested = header.queue_id.unwrap_or(-1);
    if requested < 0 {
        if topic.write_queue_nums <= 0 {
            return Err(Reject::new(
                response_code::NO_PERMISSION,
                format!("topic[{}] has no writable queue", header.topic),
            ));
        }
        return Ok(shard.random_below(topic.write_queue_nums));
    }
    let valid = topic.write_queue_nums.max(topic.read_queue_nums);
    if requested >= valid {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            format!(
                "request queueId[{requested}] is illegal, topic {} has {valid} queues",
                header.topic
            ),
        ));
    }
    Ok(requested)
}

fn check_body(shard: &Shard, body_bytes: usize) -> Result<(), Reject> {
    let max = shard.config().max_message_size;
    if body_bytes > max {
        return Err(Reject::new(
            response_code::MESSAGE_ILLEGAL,
            format!("the message body size {body_bytes} is over the max value {max}"),
        ));
    }
    Ok(())
}

fn success(
    shard: &Shard,
    request: &RemotingCommand,
    result: &AppendResult,
    queue_id: i32,
    msg_id: String,
    props: Option<SendProps>,
) -> RemotingCommand {
    let (transaction_id, recall_handle) =
        props.map_or((None, None), |p| (p.transaction_id, p.recall_handle));
    let header = SendMessageResponseHeader {
        msg_id,
        queue_id,
        queue_offset: result.queue_offset,
        transaction_id,
        batch_uniq_id: None,
        recall_handle,
    };
    let code = result.status.response_code();
    let mut response = RemotingCommand::response_to(request, code, None);
    response.ext_fields = header.to_ext();
    let config = shard.config();
    response
        .ext_fields
        .insert(properties::MSG_REGION, &config.region_id);
    let trace_on = if config.trace_on { "true" } else { "false" };
    response.ext_fields.insert(properties::TRACE_ON, trace_on);
    response
}

/// Whether a send carries a batch body. Besides Java's "true", the Apache
/// C++ client before 2.0 writes the flag as "1" (its bool to string gave
/// 0/1); reading that as false would store the whole batch as one message.
fn is_batch(header: &SendMessageRequestView<'_>, request: &RemotingCommand) -> bool {
    header.batch
        || request
            .ext_fields
            .get_any(&["batch", "m"])
            .is_some_and(|value| value.trim() == "1")
}

/// SEND_MESSAGE / SEND_MESSAGE_V2.
pub(crate) async fn send_message(
    shard: &Rc<Shard>,
    conn: &Rc<Connection>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = SendMessageRequestView::from_ext(&request.ext_fields)?;
    if is_batch(&header, request) {
        return send_batch(shard, conn, request).await;
    }
    check_body(shard, request.body.len())?;
    let topic = topic_for_send(shard, &header).await?;
    let mut queue_id = choose_queue(shard, &header, &topic)?;
    // One clock read per send: the unique key, routing and the stored
    // record agree on it.
    let now = now_ms();
    let (place, mut props) = stored_properties(shard, &header, (&mut queue_id, &topic), now)?;
    let levels = &shard.schedule().levels;
    if let Some(code) = schedule_tags_code(levels, place.topic, place.queue_id, now) {
        props.tags_code = code;
    }
    if props.bytes.len() > PROPERTIES_BYTES_MAX {
        return Err(Reject::new(
            response_code::MESSAGE_ILLEGAL,
            format!(
                "the message properties length {} is over the max value {PROPERTIES_BYTES_MAX}",
                props.bytes.len()
            ),
        ));
    }
    let record = NewRecord {
        topic: place.topic,
        queue_id: place.queue_id,
        sys_flag: place.sys_flag,
        body: &request.body,
        properties: &props.bytes,
        ..sent_record(shard, &header, conn.peer_addr(), now)
    };
    let mut result = shard.store_record(&record, props.tags_code).await?;
    let stored_bytes = u64::from(result.total_bytes);
    shard
        .metrics()
        .count_in(header.topic, props.kind, 1, stored_bytes);
    shard.await_replicas(&mut result, props.wait_store_ok).await;
    let msg_id = offset_msg_id(shard.env().store_host, result.physical_offset);
    Ok(success(
        shard,
        request,
        &result,
        queue_id,
        msg_id,
        Some(props),
    ))
}

/// Where a send is stored and its properties as stored: appended to in
/// place for a plain send ([`plain::plain`]), otherwise decoded, given a
/// unique key and the cluster, routed and encoded again. A priority
/// message takes the general path and moves to its priority's queue
/// (`queue_id` is updated, as the send's answer names it).
fn stored_properties<'a>(
    shard: &Shard,
    header: &SendMessageRequestView<'a>,
    (queue_id, topic): (&mut i32, &SendTopic),
    now: i64,
) -> Result<(Placement<'a>, SendProps), Reject> {
    let text = header.properties.unwrap_or("");
    let sys_flag = header.sys_flag.unwrap_or(0);
    let config = shard.config();
    let stamp = stamp(&config);
    let prioritized = text.contains(properties::PRIORITY);
    let plain = (!prioritized)
        .then(|| plain::plain(text, sys_flag, &stamp, || shard.next_unique_key(now)))
        .flatten();
    if let Some(props) = plain {
        let topic = header.topic;
        return Ok((
            Placement {
                topic,
                queue_id: *queue_id,
                sys_flag,
            },
            props,
        ));
    }
    let mut props = Properties::decode_str(text);
    *queue_id = priority::send_queue(&mut props, *queue_id, topic.write_queue_nums);
    let queue_id = *queue_id;
    if !matches!(props.unique_key(), Some(key) if !key.is_empty()) {
        props.insert(properties::UNIQ_KEY, shard.next_unique_key(now));
    }
    stamp.insert_into(&mut props);
    // Java 5's broker answers every send with its unique key as
    // `transactionId`; clients read it only for a half message (it becomes
    // TransactionSendResult's transactionId, the id a check-back names),
    // so only half messages carry it here and plain sends stay as they were.
    let transaction_id = (sys_flag::transaction_type(sys_flag) == sys_flag::TRANSACTION_PREPARED)
        .then(|| props.unique_key().map(str::to_owned))
        .flatten();
    let place = placement(shard, header, queue_id, &mut props, now)?;
    let mut stored = SendProps::of(&props);
    stored.transaction_id = transaction_id;
    stored.recall_handle = recall::handle_for_send(&config.broker_name, place.topic, &props);
    Ok((place, stored))
}

/// What this broker adds to every message it stores.
fn stamp(config: &BrokerConfig) -> plain::Stamp<'_> {
    plain::Stamp {
        cluster: &config.broker_cluster_name,
        region: &config.region_id,
        trace_on: config.trace_on,
    }
}

/// The fields every message a client sends is stored with: the header's
/// flag, sysFlag, born time and reconsume count, the connection as born
/// host, stored now by this broker (topic, queue, body and properties are
/// the caller's).
fn sent_record<'a>(
    shard: &Shard,
    header: &SendMessageRequestView<'a>,
    born_host: SocketAddr,
    now: i64,
) -> NewRecord<'a> {
    NewRecord {
        topic: header.topic,
        queue_id: header.queue_id.unwrap_or(0),
        flag: header.flag.unwrap_or(0),
        sys_flag: header.sys_flag.unwrap_or(0),
        born_timestamp_ms: header.born_timestamp.unwrap_or(now),
        born_host,
        store_timestamp_ms: now,
        store_host: shard.env().store_host,
        reconsume_times: header.reconsume_times.unwrap_or(0),
        prepared_transaction_offset: 0,
        body: &[],
        properties: &[],
    }
}

/// Where a message is stored and with which sysFlag.
struct Placement<'a> {
    topic: &'a str,
    queue_id: i32,
    sys_flag: i32,
}

/// Its own topic and queue, or a system topic that holds it: timer and
/// half messages (`routing`), delay levels (SCHEDULE_TOPIC_XXXX).
fn placement<'a>(
    shard: &Shard,
    header: &SendMessageRequestView<'a>,
    queue_id: i32,
    props: &mut Properties,
    now: i64,
) -> Result<Placement<'a>, Reject> {
    let sys_flag = header.sys_flag.unwrap_or(0);
    let topic = header.topic;
    let config = shard.config();
    let routed = routing::route_send(&config, topic, queue_id, sys_flag, props, now)?;
    if let Some(to) = routed {
        return Ok(Placement {
            topic: to.topic,
            queue_id: to.queue_id,
            sys_flag: to.sys_flag,
        });
    }
    let levels = &shard.schedule().levels;
    Ok(
        match redirect_delayed(levels, props, topic, queue_id, sys_flag) {
            Some(to) => Placement {
                topic: to.topic,
                queue_id: to.queue_id,
                sys_flag,
            },
            None => Placement {
                topic,
                queue_id,
                sys_flag,
            },
        },
    )
}

/// SEND_BATCH_MESSAGE: one append for the whole batch (consecutive queue
/// offsets in one queue); the answer's msgId lists every message's offset
/// id, comma-separated, as Java's does.
pub(crate) async fn send_batch(
    shard: &Rc<Shard>,
    conn: &Rc<Connection>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = SendMessageRequestView::from_ext(&request.ext_fields)?;
    crate::services::routing::check_batch(header.sys_flag.unwrap_or(0))?;
    check_body(shard, request.body.len())?;
    let topic = topic_for_send(shard, &header).await?;
    if header.topic.starts_with(RETRY_TOPIC_PREFIX) {
        return Err(Reject::new(
            response_code::MESSAGE_ILLEGAL,
            format!(
                "batch request does not support retry group {}",
                header.topic
            ),
        ));
    }
    let queue_id = choose_queue(shard, &header, &topic)?;
    let items = decode_batch(&request.body)
        .map_err(|e| Reject::new(response_code::MESSAGE_ILLEGAL, e.to_string()))?;
    if items.is_empty() {
        return Err(Reject::new(
            response_code::MESSAGE_ILLEGAL,
            "the batch holds no message",
        ));
    }
    let template = sent_record(shard, &header, conn.peer_addr(), now_ms());
    let config = shard.config();
    let stamp = stamp(&config);
    let mut encoded = BytesMut::with_capacity(request.body.len() + items.len() * 192);
    let mut codes = Vec::with_capacity(items.len());
    let mut sizes = Vec::with_capacity(items.len());
    let mut item_props = Vec::new();
    for item in &items {
        // Java's broker appends the batch's properties, which hold the
        // stamp, to each message's own.
        item_props.clear();
        item_props.extend_from_slice(&item.properties);
        if item_props
            .last()
            .is_some_and(|&b| b != properties::PROPERTY_SEPARATOR)
        {
            item_props.push(properties::PROPERTY_SEPARATOR);
        }
        stamp.encode_into(&mut item_props);
        let record = NewRecord {
            queue_id,
            flag: item.flag,
            body: &item.body,
            properties: &item_props,
            ..template
        };
        sizes.push(encode_into(&record, &mut encoded)?);
        codes.push(tag_hash(&Properties::decode(&item.properties)));
    }
    let append = AppendRequest::batch(Arc::from(header.topic), queue_id, encoded, codes);
    let body_bytes = request.body.len() as u64;
    let mut result = shard.append(append, items.len() as u64, body_bytes).await?;
    let batch_props = Properties::decode_str(header.properties.unwrap_or(""));
    let (kind, stored_bytes) = (MessageType::of(&batch_props), u64::from(result.total_bytes));
    let messages = items.len() as u64;
    shard
        .metrics()
        .count_in(header.topic, kind, messages, stored_bytes);
    shard
        .await_replicas(&mut result, wait_store_ok(&batch_props))
        .await;
    let mut ids = Vec::with_capacity(sizes.len());
    let mut position = result.physical_offset;
    for size in sizes {
        ids.push(offset_msg_id(shard.env().store_host, position));
        position += size as i64;
    }
    assert_eq!(ids.len(), items.len(), "one message id per batch item");
    Ok(success(
        shard,
        request,
        &result,
        queue_id,
        ids.join(","),
        None,
    ))
}
