//! RECALL_MESSAGE (370, RocketMQ 5.3's `RecallMessageProcessor`): checks
//! the request as Java does, in Java's order, then stores the recall
//! marker (`services::recall`) in the timer topic. The answer's `msgId` is
//! the recalled message's unique key.
//!
//! As in Java, a recall is accepted while the message is still held
//! (its due time ahead): it is not checked that the message exists, and a
//! recall in the last moments before the due time may come too late to
//! stop its delivery.

use std::rc::Rc;

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::{RecallMessageRequestHeader, RecallMessageResponseHeader};
use ferrocket_protocol::properties;
use ferrocket_protocol::record::NewRecord;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::Connection;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::append::tag_hash;
use crate::services::recall::{check_handle, marker_properties, MARKER_BODY};
use crate::services::topics::TIMER_TOPIC;
use crate::shard::Shard;

const UNAVAILABLE: &str = "recall failed, broker service not available";

pub(crate) async fn recall_message(
    shard: &Rc<Shard>,
    conn: &Rc<Connection>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = RecallMessageRequestHeader::from_ext(&request.ext_fields)?;
    let config = shard.config();
    if !config.recall_message_enable {
        return Err(Reject::new(
            response_code::NO_PERMISSION,
            "recall failed, operation is forbidden",
        ));
    }
    if config.replication.broker_role.is_slave() {
        return Err(Reject::new(response_code::SLAVE_NOT_AVAILABLE, UNAVAILABLE));
    }
    if shard.with_topic(&header.topic, |_| ()).is_none() {
        return Err(Reject::new(
            response_code::TOPIC_NOT_EXIST,
            format!("recall failed, the topic[{}] not exist", header.topic),
        ));
    }
    let now = now_ms();
    let handle = check_handle(&config, &header.topic, &header.recall_handle, now)?;
    let props = marker_properties(&handle, header.producer_group.as_deref(), now);
    let encoded = props.to_bytes();
    let record = NewRecord {
        topic: TIMER_TOPIC,
        queue_id: 0,
        flag: 0,
        sys_flag: 0,
        born_timestamp_ms: now,
        born_host: conn.peer_addr(),
        store_timestamp_ms: now,
        store_host: shard.env().store_host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: MARKER_BODY,
        properties: &encoded,
    };
    let mut result = shard.store_record(&record, tag_hash(&props)).await?;
    shard.await_replicas(&mut result, true).await;
    // Java answers success whether or not the marker was flushed or
    // replicated in time.
    let mut response = RemotingCommand::response_to(request, response_code::SUCCESS, None);
    response.ext_fields = RecallMessageResponseHeader {
        msg_id: handle.message_id,
    }
    .to_ext();
    response
        .ext_fields
        .insert(properties::MSG_REGION, &config.region_id);
    Ok(response)
}
