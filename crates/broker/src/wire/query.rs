//! Finding messages (`QueryMessageProcessor`, `AdminBrokerProcessor`):
//! QUERY_MESSAGE (12) by `topic#key` through the message index,
//! VIEW_MESSAGE_BY_ID (33) by CommitLog offset, SEARCH_OFFSET_BY_TIMESTAMP
//! (29) and GET_EARLIEST_MSG_STORETIME (32) on a queue.
//!
//! The index lives on the timer shard (see `system`); QUERY_MESSAGE is
//! forwarded there, which first indexes everything written so far, so a
//! query sees every message stored before it arrived. Candidates from the
//! index share the key's hash: each record's topic and keys are checked
//! before it is returned.

use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::properties::KEYS;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::Connection;
use ferrocket_runtime::shard::ShardCall;
use ferrocket_store::index::message_index_keys;

use crate::services::index::QUERY_COUNT_DEFAULT;
use crate::services::search::{earliest_time_owned, search_offset_owned};

use crate::error::Reject;
use crate::services::records::read_record_through;
use crate::services::topics::timer_shard;
use crate::shard::Shard;

/// `_UNIQUE_KEY_QUERY` (`MixAll.UNIQUE_MSG_QUERY_FLAG`): the key is a
/// UNIQ_KEY; the broker then uses its default maximum count.
pub const UNIQUE_KEY_QUERY_FLAG: &str = "_UNIQUE_KEY_QUERY";
/// Most bytes of records one answer carries.
pub const QUERY_BYTES_MAX: usize = 8 * 1024 * 1024;

/// A QUERY_MESSAGE as the index shard executes it.
#[derive(Debug, Clone)]
pub(crate) struct QueryRequest {
    pub topic: String,
    pub key: String,
    pub max: usize,
    pub begin_ms: i64,
    pub end_ms: i64,
}

/// Matching records and the index's last update.
#[derive(Debug, Clone)]
pub(crate) struct QueryAnswer {
    pub body: Bytes,
    pub count: usize,
    pub last_update_ms: i64,
    pub last_update_offset: i64,
}

/// QUERY_MESSAGE.
pub(crate) async fn query_message(
    shard: &Rc<Shard>,
    conn: &Connection,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let fields = &request.ext_fields;
    let topic = fields.required("topic")?.to_string();
    let key = fields.required("key")?.to_string();
    let unique = fields
        .get(UNIQUE_KEY_QUERY_FLAG)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let max = if unique {
        QUERY_COUNT_DEFAULT
    } else {
        usize::try_from(
            fields
                .get_i32("maxNum")?
                .unwrap_or(QUERY_COUNT_DEFAULT as i32),
        )
        .unwrap_or(0)
    };
    // Nothing older than the topic's retention.ms, which may still be in
    // the CommitLog.
    let oldest_kept = shard
        .with_topic(&topic, |t| {
            crate::services::topic_attributes::oldest_kept_ms(t, crate::clock::now_ms())
        })
        .flatten()
        .unwrap_or(0);
    let begin_ms = fields
        .get_i64("beginTimestamp")?
        .unwrap_or(0)
        .max(oldest_kept);
    let end_ms = fields.get_i64("endTimestamp")?.unwrap_or(i64::MAX);
    let query = QueryRequest {
        topic: topic.clone(),
        key,
        max,
        begin_ms,
        end_ms,
    };
    let target = timer_shard(shard.count());
    let answer = shard.call(target, query).await??;
    if answer.count > 0 {
        // Every record kept is of `topic` (the query drops others).
        crate::shard::access::check_stored(shard, conn, request, &topic)?;
    }
    let code = if answer.count > 0 {
        response_code::SUCCESS
    } else {
        response_code::QUERY_NOT_FOUND
    };
    let remark = (answer.count == 0)
        .then(|| "can not find message, maybe time range not correct".to_string());
    let mut response = RemotingCommand::response_to(request, code, remark);
    response.ext_fields.insert(
        "indexLastUpdateTimestamp",
        answer.last_update_ms.to_string(),
    );
    response.ext_fields.insert(
        "indexLastUpdatePhyoffset",
        answer.last_update_offset.to_string(),
    );
    response.body = answer.body;
    Ok(response)
}

/// On the index shard: the matching records, newest first.
/// A key lookup travels to the index's shard as itself.
impl ShardCall<Shard> for QueryRequest {
    type Reply = Result<QueryAnswer, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        execute(&shard, self).await
    }
}

/// On a queue's owner: the first queue offset stored at or after
/// `timestamp_ms`.
struct SearchOffset {
    topic: String,
    queue_id: i32,
    timestamp_ms: i64,
}

impl ShardCall<Shard> for SearchOffset {
    type Reply = Result<i64, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        search_offset_owned(shard.store(), &self.topic, self.queue_id, self.timestamp_ms).await
    }
}

/// On a queue's owner: the store time of its first message.
struct EarliestTime {
    topic: String,
    queue_id: i32,
}

impl ShardCall<Shard> for EarliestTime {
    type Reply = Result<i64, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        earliest_time_owned(shard.store(), &self.topic, self.queue_id).await
    }
}

pub(crate) async fn execute(shard: &Rc<Shard>, query: QueryRequest) -> Result<QueryAnswer, Reject> {
    let feed = shard
        .services()
        .index
        .get()
        .cloned()
        .ok_or_else(|| Reject::system("the message index is not on this shard"))?;
    feed.catch_up(shard.store()).await;
    let (offsets, (last_update_ms, last_update_offset)) = feed.query(
        &query.topic,
        &query.key,
        query.max,
        query.begin_ms,
        query.end_ms,
    );
    let mut body = BytesMut::new();
    let mut count = 0;
    for offset in offsets {
        // Offloaded records come back through the tier (fetched off this
        // shard's executor, which serves others meanwhile).
        let Some(record) = read_record_through(shard.store(), offset).await else {
            continue;
        };
        if body.len() + record.len() > QUERY_BYTES_MAX && count > 0 {
            break;
        }
        let Ok(view) = crate::services::records::view(&record) else {
            continue;
        };
        if view.topic != query.topic {
            continue;
        }
        let props = view.properties();
        let keys = message_index_keys(props.get(KEYS), props.unique_key());
        if !keys.iter().any(|k| *k == query.key) {
            continue;
        }
        body.extend_from_slice(&record);
        count += 1;
    }
    Ok(QueryAnswer {
        body: body.freeze(),
        count,
        last_update_ms,
        last_update_offset,
    })
}

/// VIEW_MESSAGE_BY_ID: the record at the CommitLog offset `offset` (the
/// offset message id's last 8 bytes, decoded by the client).
pub(crate) async fn view_message_by_id(
    shard: &Shard,
    conn: &Connection,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let offset = request.ext_fields.required_i64("offset")?;
    let record = crate::services::records::read_record_through(shard.store(), offset)
        .await
        .ok_or_else(|| Reject::system(format!("can not find message by the offset, {offset}")))?;
    let view = crate::services::records::view(&record)?;
    crate::shard::access::check_stored(shard, conn, request, view.topic)?;
    let mut response = RemotingCommand::response_to(request, response_code::SUCCESS, None);
    response.body = record;
    Ok(response)
}

/// SEARCH_OFFSET_BY_TIMESTAMP (answer header `offset`) and
/// GET_EARLIEST_MSG_STORETIME (answer header `timestamp`), run on the
/// queue's owner.
pub(crate) async fn queue_time_request(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
    search: bool,
) -> Result<RemotingCommand, Reject> {
    let fields = &request.ext_fields;
    let topic = fields.required("topic")?.to_string();
    let queue_id = fields.required_i32("queueId")?;
    if queue_id < 0 {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            format!("invalid queueId {queue_id}"),
        ));
    }
    if shard.topic(&topic).is_none() {
        return Err(Reject::new(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{topic}] not exist, apply first please!"),
        ));
    }
    let owner = shard.owner_of(&topic, queue_id);
    let (value, field) = if search {
        let timestamp_ms = fields.required_i64("timestamp")?;
        let ask = SearchOffset {
            topic,
            queue_id,
            timestamp_ms,
        };
        (shard.call(owner, ask).await??, "offset")
    } else {
        let ask = EarliestTime { topic, queue_id };
        (shard.call(owner, ask).await??, "timestamp")
    };
    let mut response = RemotingCommand::response_to(request, response_code::SUCCESS, None);
    response.ext_fields.insert(field, value.to_string());
    Ok(response)
}
