//! ACK_MESSAGE (200051), BATCH_ACK_MESSAGE (200151) and
//! CHANGE_MESSAGE_INVISIBLETIME (200053): each names a checkpoint by the
//! handle's start offset and pop time, on the topic the message was read
//! from, and runs on that queue's owner.

use std::rc::Rc;

use base64::Engine;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
};
use ferrocket_protocol::lite::lite_group;
use ferrocket_protocol::pop::ExtraInfo;
use ferrocket_protocol::RemotingCommand;
use serde::Deserialize;

use super::{refuse_on_slave, REVIVE_QID};
use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::lite::unpack_position;
use crate::services::pop::order::ORDER_REVIVE_QID;
use crate::services::pop::CkKey;
use crate::shard::pop::{pop_retry_topic, AckPop, ChangeInvisible};
use crate::shard::Shard;

/// The checkpoint a handle names, on the topic the message was read from,
/// and whether the handle is an ordered pop's (reviveQid 999).
fn checkpoint_key(
    shard: &Shard,
    group: &str,
    topic: &str,
    queue_id: i32,
    extra: &str,
) -> Result<(CkKey, bool), Reject> {
    let read = shard
        .with_topic(topic, |t| t.read_queue_nums)
        .ok_or_else(|| {
            Reject::new(
                response_code::TOPIC_NOT_EXIST,
                format!("topic[{topic}] not exist, apply first please!"),
            )
        })?;
    if queue_id < 0 || queue_id >= read {
        return Err(Reject::new(
            response_code::MESSAGE_ILLEGAL,
            format!("queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{read}]"),
        ));
    }
    let info = ExtraInfo::parse(extra)
        .map_err(|e| Reject::new(response_code::INVALID_PARAMETER, e.to_string()))?;
    let key = CkKey {
        group: group.to_string(),
        topic: topic.to_string(),
        queue_id,
        start_offset: info.ck_queue_offset,
        pop_time_ms: info.pop_time_ms,
    };
    Ok((key, info.revive_qid == ORDER_REVIVE_QID))
}

/// The group, queue and offset a handle names: a lite message's (the
/// header's `liteTopic` set, from POP_LITE_MESSAGE) are its lite group and
/// the queue and offset packed in `offset`; any other's are as given.
fn target(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    lite_topic: Option<&str>,
) -> Result<(String, i32, i64), Reject> {
    let Some(lite) = lite_topic.filter(|l| !l.is_empty()) else {
        return Ok((group.to_string(), queue_id, offset));
    };
    let (queue_id, offset) = unpack_position(offset).ok_or_else(|| {
        Reject::new(
            response_code::INVALID_PARAMETER,
            format!("offset {offset} is no lite message's position"),
        )
    })?;
    Ok((lite_group(group, topic, lite), queue_id, offset))
}

/// Acks `offsets` of checkpoint `key` on its queue's owner.
async fn ack_on_owner(
    shard: &Shard,
    key: CkKey,
    offsets: Vec<i64>,
    order: bool,
) -> Result<(), Reject> {
    let owner = shard.owner_of(&key.topic, key.queue_id);
    let ack = AckPop {
        key,
        offsets,
        order,
    };
    shard.call(owner, ack).await?
}

/// ACK_MESSAGE.
pub(crate) async fn ack_message(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    refuse_on_slave(shard)?;
    let header = AckMessageRequestHeader::from_ext(&request.ext_fields)?;
    let (group, queue_id, offset) = target(
        &header.consumer_group,
        &header.topic,
        header.queue_id,
        header.offset,
        header.lite_topic.as_deref(),
    )?;
    let (key, order) = checkpoint_key(shard, &group, &header.topic, queue_id, &header.extra_info)?;
    ack_on_owner(shard, key, vec![offset], order).await?;
    Ok(RemotingCommand::response_to(
        request,
        response_code::SUCCESS,
        None,
    ))
}

/// CHANGE_MESSAGE_INVISIBLETIME.
pub(crate) async fn change_invisible_time(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    refuse_on_slave(shard)?;
    let header = ChangeInvisibleTimeRequestHeader::from_ext(&request.ext_fields)?;
    if header.invisible_time <= 0 {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            "invisibleTime must be positive",
        ));
    }
    let (group, queue_id, offset) = target(
        &header.consumer_group,
        &header.topic,
        header.queue_id,
        header.offset,
        header.lite_topic.as_deref(),
    )?;
    let (key, order) = checkpoint_key(shard, &group, &header.topic, queue_id, &header.extra_info)?;
    let now = now_ms();
    let owner = shard.owner_of(&key.topic, key.queue_id);
    let change = ChangeInvisible {
        key,
        offset,
        invisible_time_ms: header.invisible_time,
        now_ms: now,
        order,
    };
    shard.call(owner, change).await??;
    let mut response = RemotingCommand::response_to(request, response_code::SUCCESS, None);
    response.ext_fields = ChangeInvisibleTimeResponseHeader {
        pop_time: now,
        invisible_time: header.invisible_time,
        revive_qid: if order { ORDER_REVIVE_QID } else { REVIVE_QID },
    }
    .to_ext();
    Ok(response)
}

/// One entry of BATCH_ACK_MESSAGE's body (`BatchAck`, Java's short keys).
#[derive(Debug, Deserialize)]
struct BatchAck {
    /// Consumer group.
    c: String,
    /// The original topic.
    t: String,
    /// Retry mark: "0" the topic, "1" / "2" its pop retry topic.
    r: String,
    /// Checkpoint start offset.
    so: i64,
    q: i32,
    /// Revive queue: 999 for an ordered pop.
    #[serde(default)]
    rq: i32,
    /// Pop time.
    pt: i64,
    /// Bit i set: offset `so + i` acked.
    b: BitSetBytes,
}

/// A bit set's little-endian bytes: a base64 string (Java's fastjson form
/// of `BitSet.toByteArray`) or a JSON array of byte values
/// (`rocketmq-client-rust`'s).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum BitSetBytes {
    Base64(String),
    Bytes(Vec<u8>),
}

impl BitSetBytes {
    fn bytes(&self) -> Result<Vec<u8>, Reject> {
        match self {
            BitSetBytes::Bytes(bytes) => Ok(bytes.clone()),
            BitSetBytes::Base64(text) => base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .map_err(|e| {
                    Reject::new(
                        response_code::INVALID_PARAMETER,
                        format!("batch ack bit set: {e}"),
                    )
                }),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BatchAckBody {
    #[serde(default)]
    acks: Vec<BatchAck>,
}

/// The offsets a bit set (little-endian bytes) marks from `start`.
fn bitset_offsets(start: i64, bits: &BitSetBytes) -> Result<Vec<i64>, Reject> {
    let bytes = bits.bytes()?;
    let mut offsets = Vec::new();
    for (index, byte) in bytes.iter().enumerate().take(POP_BITS_BYTES_MAX) {
        for bit in 0..8 {
            if byte & (1 << bit) != 0 {
                offsets.push(start + (index * 8 + bit) as i64);
            }
        }
    }
    Ok(offsets)
}

/// A batch ack names at most this many offsets per checkpoint (a pop hands
/// out at most 32; Java's bit set grows in 64-bit words).
const POP_BITS_BYTES_MAX: usize = 64;

/// BATCH_ACK_MESSAGE: no header, a JSON body of acks.
pub(crate) async fn batch_ack(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    refuse_on_slave(shard)?;
    if request.body.is_empty() {
        return Err(Reject::new(
            response_code::NO_MESSAGE,
            "the batch ack has no body",
        ));
    }
    let body: BatchAckBody = serde_json::from_slice(&request.body).map_err(|e| {
        Reject::new(
            response_code::INVALID_PARAMETER,
            format!("batch ack body: {e}"),
        )
    })?;
    if body.acks.is_empty() {
        return Err(Reject::new(
            response_code::NO_MESSAGE,
            "the batch ack names no message",
        ));
    }
    for ack in body.acks {
        let topic = match ack.r.as_str() {
            "0" => ack.t.clone(),
            "2" => format!("%RETRY%{}+{}", ack.c, ack.t),
            _ => pop_retry_topic(&ack.c, &ack.t),
        };
        let offsets = bitset_offsets(ack.so, &ack.b)?;
        if offsets.is_empty() || shard.topic(&topic).is_none() {
            continue;
        }
        let key = CkKey {
            group: ack.c,
            topic,
            queue_id: ack.q,
            start_offset: ack.so,
            pop_time_ms: ack.pt,
        };
        ack_on_owner(shard, key, offsets, ack.rq == ORDER_REVIVE_QID).await?;
    }
    Ok(RemotingCommand::response_to(
        request,
        response_code::SUCCESS,
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_bit_sets_name_offsets_from_the_start() {
        // BitSet {0, 2, 9}.toByteArray() = [0b101, 0b10].
        let encoded = base64::engine::general_purpose::STANDARD.encode([0b101u8, 0b10]);
        let java = BitSetBytes::Base64(encoded);
        assert_eq!(bitset_offsets(100, &java).unwrap(), vec![100, 102, 109]);
        let rust = BitSetBytes::Bytes(vec![0b101, 0b10, 0, 0, 0, 0, 0, 0]);
        assert_eq!(bitset_offsets(100, &rust).unwrap(), vec![100, 102, 109]);
        assert!(bitset_offsets(0, &BitSetBytes::Base64("!!".into())).is_err());
    }
}
