//! PULL_MESSAGE (11) (Java's `PullMessageProcessor`): the receiving shard
//! checks the request and resolves the subscription, then forwards it to
//! the queue's owner shard (`services::pull`), and answers what it found.

use std::rc::Rc;

use ferrocket_protocol::body::perm;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::{
    pull_sys_flag, PullMessageRequestHeader, PullMessageResponseHeader,
};
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::Connection;

use crate::error::Reject;
use crate::services::filter::TagFilter;
use crate::services::metrics::labels;
use crate::services::pull::{PullQuery, SUSPEND_TIMEOUT_MS_DEFAULT};
use crate::shard::Shard;

fn filter_for(shard: &Shard, header: &PullMessageRequestHeader) -> Result<TagFilter, Reject> {
    let parse = |expression: &str, kind: Option<&str>| {
        crate::services::filter::sql::pull_filter(
            expression,
            kind,
            shard.config().enable_property_filter,
        )
    };
    if header.sys_flag & pull_sys_flag::SUBSCRIPTION != 0 {
        return parse(
            header.subscription.as_deref().unwrap_or("*"),
            header.expression_type.as_deref(),
        );
    }
    let found = shard.clients().with(|clients| {
        clients
            .subscription(&header.consumer_group, &header.topic)
            .map(|s| (s.sub_string.clone(), s.expression_type.clone()))
    });
    let (expression, kind) =
        found.map_err(|remark| Reject::new(response_code::SUBSCRIPTION_NOT_EXIST, remark))?;
    parse(&expression, kind.as_deref())
}

/// The pull answer's `suggestWhichBrokerId`: with `slaveReadEnable`, a
/// consumer reading further behind than memory holds is sent to the
/// group's `whichBrokerWhenConsumeSlowly` (a slave), one that caught up to
/// the group's `brokerId` (the master). Without it, always the master.
fn suggest_broker(shard: &Shard, group: &str, behind_bytes: i64) -> i64 {
    const MASTER_ID: i64 = 0;
    if !shard.config().replication.slave_read_enable {
        return MASTER_ID;
    }
    let (home, slow) = shard
        .groups()
        .with(|t| {
            t.get(group)
                .map(|g| (g.broker_id, g.which_broker_when_consume_slowly))
        })
        .unwrap_or((MASTER_ID, 1));
    if behind_bytes > shard.env().in_memory_bytes {
        slow
    } else {
        home
    }
}

/// PULL_MESSAGE on the receiving shard.
pub(crate) async fn pull_message(
    shard: &Rc<Shard>,
    conn: &Connection,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = PullMessageRequestHeader::from_ext(&request.ext_fields)?;
    let replication = &shard.config().replication;
    if replication.broker_role.is_slave() && !replication.slave_read_enable {
        // Java's `rejectRequest`, answered by its remoting layer.
        return Err(Reject::new(
            response_code::SYSTEM_BUSY,
            "[REJECTREQUEST]system busy, start flow control for a while (a slave answers pulls with slaveReadEnable=true)",
        ));
    }
    let Some((perm, read_queue_nums)) =
        shard.with_topic(&header.topic, |t| (t.perm, t.read_queue_nums))
    else {
        return Err(Reject::new(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist, apply first please!", header.topic),
        ));
    };
    if !perm::is_readable(perm) {
        return Err(Reject::new(
            response_code::NO_PERMISSION,
            format!("the topic[{}] pulling message is forbidden", header.topic),
        ));
    }
    if header.queue_id < 0 || header.queue_id >= read_queue_nums {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            format!(
                "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}]",
                header.queue_id, header.topic, read_queue_nums
            ),
        ));
    }
    crate::shard::groups::check_pull(shard, &header.consumer_group).await?;
    let filter = filter_for(shard, &header)?;
    let config = shard.config();
    let suspend_ms = if header.sys_flag & pull_sys_flag::SUSPEND != 0 && config.long_polling_enable
    {
        let asked = header
            .suspend_timeout_millis
            .unwrap_or(SUSPEND_TIMEOUT_MS_DEFAULT)
            .max(0) as u64;
        asked.min(config.suspend_timeout_ms_max)
    } else {
        0
    };
    let commit_offset = (header.sys_flag & pull_sys_flag::COMMIT_OFFSET != 0
        && header.commit_offset >= 0)
        .then_some(header.commit_offset);
    let max_bytes = match header.max_msg_bytes {
        Some(asked) if asked > 0 => (asked as usize).min(config.pull_bytes_max),
        _ => config.pull_bytes_max,
    };
    let query = PullQuery {
        group: header.consumer_group,
        topic: header.topic,
        queue_id: header.queue_id,
        queue_offset: header.queue_offset,
        max_messages: (header.max_msg_nums.max(1) as usize).min(config.pull_messages_max),
        max_bytes,
        filter,
        commit_offset,
        suspend_ms,
        client_gone: (suspend_ms > 0).then(|| conn.client_gone()),
    };
    let owner = shard.owner_of(&query.topic, query.queue_id);
    let group = query.group.clone();
    let topic = query.topic.clone();
    let answer = shard.call(owner, query).await?;
    let suggest = suggest_broker(shard, &group, answer.behind_bytes);
    let messages = u64::from(answer.message_count);
    shard.count_got(messages);
    // Java counts no pulls of retry and DLQ topics as messages out.
    if !labels::retry_or_dlq(&topic) {
        let bytes = answer.body.len() as u64;
        shard
            .metrics()
            .count_out(&group, &topic, false, messages, bytes);
    }
    let mut response = RemotingCommand::response_to(request, answer.code, answer.remark);
    response.ext_fields = PullMessageResponseHeader {
        suggest_which_broker_id: suggest,
        next_begin_offset: answer.next_begin_offset,
        min_offset: answer.min_offset,
        max_offset: answer.max_offset,
    }
    .to_ext();
    response.body = answer.body;
    Ok(response)
}
