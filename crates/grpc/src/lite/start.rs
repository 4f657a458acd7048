//! A SyncLiteSubscription's `offset_option`: POLICY MAX starts the added
//! lite topics after what the parent topic already holds (each lite
//! topic's group is committed at the end of every queue of the parent),
//! as Java's broker resets a lite topic's queue. LAST, MIN and no option
//! start a new lite topic at its oldest message; OFFSET and TAIL_N name
//! offsets in Java's per-lite-topic queue, which Ferrocket does not have,
//! and TIMESTAMP is ignored by Java's 5.5.0 broker: they change nothing.

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{QueueRequestHeader, UpdateConsumerOffsetRequestHeader};
use ferrocket_protocol::RemotingCommand;

use super::lite_group;
use crate::backend::Backend;
use crate::offsets::{offset_call, CALL_TIMEOUT};
use crate::pb::{self, offset_option::OffsetType, offset_option::Policy, Status};
use crate::status::from_answer;

/// Whether `option` is POLICY MAX.
pub(super) fn starts_at_newest(option: Option<&pb::OffsetOption>) -> bool {
    matches!(
        option.and_then(|o| o.offset_type.as_ref()),
        Some(OffsetType::Policy(policy)) if *policy == Policy::Max as i32
    )
}

/// Commits each lite topic's group of `group` at the end of every queue
/// of the parent `topic`, on each broker of its route.
pub(super) async fn start_at_newest(
    backend: &Backend,
    group: &str,
    topic: &str,
    lite_topics: &[String],
) -> Result<(), Status> {
    let route = backend.route(topic).await?;
    for data in &route.queue_datas {
        let queues = data.read_queue_nums.max(data.write_queue_nums).max(0);
        for queue_id in 0..queues {
            let mut ask = RemotingCommand::request(request_code::GET_MAX_OFFSET);
            ask.ext_fields = QueueRequestHeader {
                topic: topic.to_string(),
                queue_id,
            }
            .to_ext();
            let end = offset_call(backend, &data.broker_name, ask).await?;
            for lite in lite_topics {
                let header = UpdateConsumerOffsetRequestHeader {
                    consumer_group: lite_group(group, topic, lite),
                    topic: topic.to_string(),
                    queue_id,
                    commit_offset: end,
                };
                let mut commit = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET);
                commit.ext_fields = header.to_ext();
                let answer = backend
                    .invoke_broker(&data.broker_name, commit, CALL_TIMEOUT)
                    .await?;
                if answer.code != response_code::SUCCESS {
                    return Err(from_answer(answer.code, answer.remark.as_deref()));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_policy_max_starts_at_the_newest() {
        let option = |kind| {
            Some(pb::OffsetOption {
                offset_type: Some(kind),
            })
        };
        assert!(starts_at_newest(
            option(OffsetType::Policy(Policy::Max as i32)).as_ref()
        ));
        assert!(!starts_at_newest(
            option(OffsetType::Policy(Policy::Min as i32)).as_ref()
        ));
        assert!(!starts_at_newest(option(OffsetType::TailN(3)).as_ref()));
        assert!(!starts_at_newest(None));
    }
}
