//! QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15), GET_MAX_OFFSET
//! (30) and GET_MIN_OFFSET (31). Offsets and ConsumeQueues of a queue live on
//! its owner shard; these forward there.

use std::rc::Rc;

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::{
    OffsetResponseHeader, QueryConsumerOffsetRequestHeader, QueueRequestHeader,
    UpdateConsumerOffsetRequestHeader,
};
use ferrocket_protocol::RemotingCommand;

use ferrocket_runtime::shard::ShardCall;

use crate::error::Reject;
use crate::services::offsets::first_message_in_memory;
use crate::shard::Shard;

fn offset_response(request: &RemotingCommand, offset: i64) -> RemotingCommand {
    let mut response = RemotingCommand::response_to(request, response_code::SUCCESS, None);
    response.ext_fields = OffsetResponseHeader { offset }.to_ext();
    response
}

fn require_topic(shard: &Shard, topic: &str) -> Result<(), Reject> {
    if shard.topic(topic).is_none() {
        return Err(Reject::new(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{topic}] not exist, apply first please!"),
        ));
    }
    Ok(())
}

/// On the owner: the group's committed offset, or 0 for a group new to a
/// queue whose first message is still in memory (Java's
/// `checkInMemByConsumeOffset`), else QUERY_NOT_FOUND.
pub(crate) fn query_owned(
    shard: &Shard,
    group: &str,
    topic: &str,
    queue_id: i32,
    set_zero_if_not_found: bool,
) -> Result<i64, Reject> {
    if let Some(offset) = shard.offsets().borrow().query(group, topic, queue_id) {
        return Ok(offset);
    }
    if !set_zero_if_not_found {
        return Err(Reject::new(
            response_code::QUERY_NOT_FOUND,
            "Not found, do not set to zero, maybe this group boot first",
        ));
    }
    let queue = shard.store().consume_queue(topic, queue_id)?;
    let written = shard.env().store.written_offset();
    if first_message_in_memory(&queue, written, shard.env().in_memory_bytes) {
        Ok(0)
    } else {
        Err(Reject::new(
            response_code::QUERY_NOT_FOUND,
            "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
        ))
    }
}

/// On the owner: the queue's min and max offsets (0 and 0 when empty).
pub(crate) fn bounds_owned(
    shard: &Shard,
    topic: &str,
    queue_id: i32,
) -> Result<(i64, i64), Reject> {
    let queue = shard.store().consume_queue(topic, queue_id)?;
    Ok((queue.min_offset(), queue.max_offset()))
}

/// QUERY_CONSUMER_OFFSET.
pub(crate) async fn query_consumer_offset(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = QueryConsumerOffsetRequestHeader::from_ext(&request.ext_fields)?;
    if shard.topic(&header.topic).is_none() {
        return Err(Reject::new(
            response_code::QUERY_NOT_FOUND,
            format!("Not found: topic[{}] does not exist", header.topic),
        ));
    }
    let set_zero = !header
        .set_zero_if_not_found
        .as_deref()
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"));
    let owner = shard.owner_of(&header.topic, header.queue_id);
    let ask = QueryOffset {
        group: header.consumer_group,
        topic: header.topic,
        queue_id: header.queue_id,
        set_zero_if_not_found: set_zero,
    };
    let offset = shard.call(owner, ask).await??;
    Ok(offset_response(request, offset))
}

/// On the queue's owner: the group's committed offset ([`query_owned`]).
struct QueryOffset {
    group: String,
    topic: String,
    queue_id: i32,
    set_zero_if_not_found: bool,
}

impl ShardCall<Shard> for QueryOffset {
    type Reply = Result<i64, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let Self {
            group,
            topic,
            queue_id,
            set_zero_if_not_found,
        } = self;
        query_owned(&shard, &group, &topic, queue_id, set_zero_if_not_found)
    }
}

/// UPDATE_CONSUMER_OFFSET.
pub(crate) async fn update_consumer_offset(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = UpdateConsumerOffsetRequestHeader::from_ext(&request.ext_fields)?;
    require_topic(shard, &header.topic)?;
    crate::services::groups::validate_group(&header.consumer_group)
        .map_err(|e| Reject::new(response_code::INVALID_PARAMETER, e))?;
    // Offsets are kept only for queues the topic has: a client cannot grow
    // the offset table with made-up queue ids.
    let queues = shard
        .with_topic(&header.topic, |t| t.read_queue_nums.max(t.write_queue_nums))
        .unwrap_or(0);
    if header.queue_id < 0 || header.queue_id >= queues || header.commit_offset < 0 {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            format!(
                "invalid queueId {} (topic {} has {queues} queues) or commitOffset {}",
                header.queue_id, header.topic, header.commit_offset
            ),
        ));
    }
    let owner = shard.owner_of(&header.topic, header.queue_id);
    let commit = CommitOffset {
        group: header.consumer_group,
        topic: header.topic,
        queue_id: header.queue_id,
        offset: header.commit_offset,
    };
    shard.call(owner, commit).await?;
    Ok(RemotingCommand::response_to(
        request,
        response_code::SUCCESS,
        None,
    ))
}

/// On the queue's owner: stores the group's offset.
struct CommitOffset {
    group: String,
    topic: String,
    queue_id: i32,
    offset: i64,
}

impl ShardCall<Shard> for CommitOffset {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        shard.assert_owns(&self.topic, self.queue_id);
        shard
            .offsets()
            .borrow_mut()
            .commit(&self.group, &self.topic, self.queue_id, self.offset);
    }
}

/// GET_MAX_OFFSET (`max == true`) and GET_MIN_OFFSET.
pub(crate) async fn queue_offset(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
    max: bool,
) -> Result<RemotingCommand, Reject> {
    let header = QueueRequestHeader::from_ext(&request.ext_fields)?;
    if header.queue_id < 0 {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            format!("invalid queueId {}", header.queue_id),
        ));
    }
    if shard.topic(&header.topic).is_none() {
        // Java answers 0 for a queue it does not have.
        return Ok(offset_response(request, 0));
    }
    let owner = shard.owner_of(&header.topic, header.queue_id);
    let ask = QueueBounds {
        topic: header.topic,
        queue_id: header.queue_id,
    };
    let (min, end) = shard.call(owner, ask).await??;
    Ok(offset_response(request, if max { end } else { min }))
}

/// On the queue's owner: its min and max offsets ([`bounds_owned`]).
struct QueueBounds {
    topic: String,
    queue_id: i32,
}

impl ShardCall<Shard> for QueueBounds {
    type Reply = Result<(i64, i64), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard.assert_owns(&self.topic, self.queue_id);
        bounds_owned(&shard, &self.topic, self.queue_id)
    }
}
