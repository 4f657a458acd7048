//! The answer to a request the broker does not serve: REQUEST_CODE_NOT_SUPPORTED
//! (3), with a remark that says what was asked and, for the requests Java's
//! admin tools send, why Ferrocket does not do it and what to use instead.
//! mqadmin prints the remark, so `cleanExpiredCQ` says more than "request
//! type 306 not supported".

use ferrocket_protocol::codes::{request_code_name, response_code};
use ferrocket_protocol::RemotingCommand;

/// The requests Java's broker (RocketMQ 5.5.0) handles that Ferrocket's
/// refuses, by RocketMQ `RequestCode`, with their name and why
/// (tests/java_request_codes.rs checks every Java code is served or here).
const REFUSED: &[(i32, &str, &str)] = &[
    (
        61,
        "GET_TIMER_METRICS",
        "Ferrocket's timer store counts the timers it holds in total, not per topic as \
         Java's TimerMetrics does, and does not send per-topic counts it does not keep; a \
         Java slave keeps its own timer metrics",
    ),
    (
        223,
        "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
        "the broker does not collect offset tables from a group's clients; read the \
         group's progress with GET_CONSUME_STATS (mqadmin consumerProgress)",
    ),
    (
        303,
        "QUERY_CONSUME_TIME_SPAN",
        "per-queue consume time spans are not computed; use GET_CONSUME_STATS (mqadmin \
         consumerProgress) and SEARCH_OFFSET_BY_TIMESTAMP",
    ),
    (
        306,
        "CLEAN_EXPIRED_CONSUMEQUEUE",
        "Ferrocket deletes a ConsumeQueue's expired files itself, with the CommitLog \
         segments they index (checked every cleanResourceInterval ms); there is no manual clean",
    ),
    (
        308,
        "QUERY_CORRECTION_OFFSET",
        "the lowest offset over a list of groups (correction offsets) is not computed; \
         query each group's offsets with GET_CONSUME_STATS",
    ),
    (
        314,
        "CLONE_GROUP_OFFSET",
        "copying one group's offsets to another is not supported; set the new group's \
         offsets with INVOKE_BROKER_TO_RESET_OFFSET (mqadmin resetOffsetByTime)",
    ),
    (
        316,
        "CLEAN_UNUSED_TOPIC",
        "Ferrocket deletes a topic's ConsumeQueues when the topic is deleted \
         (DELETE_TOPIC_IN_BROKER), so no unused topic's files remain to clean",
    ),
    (
        323,
        "RESUME_CHECK_HALF_MESSAGE",
        "a half message is not re-checked on request: the broker checks half messages \
         itself every transactionCheckInterval ms",
    ),
    (
        329,
        "DELETE_EXPIRED_COMMITLOG",
        "Ferrocket deletes expired CommitLog segments itself (fileReservedTime, deleteWhen, \
         diskMaxUsedSpaceRatio, checked every cleanResourceInterval ms); there is no manual trigger",
    ),
    (
        345,
        "QUERY_SUBSCRIPTION_BY_CONSUMER",
        "one group's subscription to one topic is not answered alone; \
         GET_CONSUMER_CONNECTION_LIST (mqadmin consumerConnection) lists the group's \
         subscriptions",
    ),
    (
        353,
        "UPDATE_AND_GET_GROUP_FORBIDDEN",
        "per-topic read bans of groups (forbidden groups) are not supported; deny a group \
         with ACL instead",
    ),
    (
        354,
        "CHECK_ROCKSDB_CQ_WRITE_PROGRESS",
        "Ferrocket has no RocksDB ConsumeQueue (its ConsumeQueues are files)",
    ),
    (
        355,
        "EXPORT_ROCKSDB_CONFIG_TO_JSON",
        "Ferrocket keeps topics, groups and offsets in JSON files under \
         {storePathRootDir}/config, not in RocksDB; read them there",
    ),
    (
        513,
        "UPDATE_AND_CREATE_STATIC_TOPIC",
        "static topics (logic queue mappings) are not supported; create an ordinary \
         topic (UPDATE_AND_CREATE_TOPIC, mqadmin updateTopic)",
    ),
    (
        902,
        "ADD_BROKER",
        "Ferrocket has no broker container: run each broker as its own `ferrocket broker`",
    ),
    (
        903,
        "REMOVE_BROKER",
        "Ferrocket has no broker container: stop the broker's own process",
    ),
    (
        906,
        "EXCHANGE_BROKER_HA_INFO",
        "Ferrocket brokers do not exchange HA addresses by request: a slave learns its \
         master from the controller (controller mode), from the name server's answer \
         to its registration, or from haMasterAddress",
    ),
    (
        908,
        "RESET_MASTER_FLUSH_OFFSET",
        "the master flush offset is not set by hand: a Ferrocket slave follows its master's \
         CommitLog from the HA stream",
    ),
    (
        2001,
        "UPDATE_COLD_DATA_FLOW_CTR_CONFIG",
        "cold data flow control is not implemented",
    ),
    (
        2002,
        "REMOVE_COLD_DATA_FLOW_CTR_CONFIG",
        "cold data flow control is not implemented",
    ),
    (
        2003,
        "GET_COLD_DATA_FLOW_CTR_INFO",
        "cold data flow control is not implemented",
    ),
    (
        2004,
        "SET_COMMITLOG_READ_MODE",
        "Ferrocket has no CommitLog read-ahead mode (madvise) to set",
    ),
    (
        5001,
        "SWITCH_TIMER_ENGINE",
        "Ferrocket has one timer engine (its timing wheel); there is no RocksDB timeline to \
         switch to",
    ),
    (
        200056,
        "POP_ROLLBACK",
        "exporting or rolling back pop records is not supported (pop checkpoints are \
         Ferrocket's own files)",
    ),
];

/// The remark for an unserved request code: its name when known, and the
/// reason when it is one mqadmin sends.
pub(crate) fn remark(code: i32) -> String {
    if let Some((_, name, why)) = REFUSED.iter().find(|(c, _, _)| *c == code) {
        return format!(" request type {code} ({name}) not supported by Ferrocket: {why}");
    }
    match request_code_name(code) {
        // Java's words, leading space included.
        "UNKNOWN" => format!(" request type {code} not supported"),
        name => format!(" request type {code} ({name}) not supported by this broker"),
    }
}

/// REQUEST_CODE_NOT_SUPPORTED for `request`, with [`remark`].
pub(crate) fn answer(request: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(
        request,
        response_code::REQUEST_CODE_NOT_SUPPORTED,
        Some(remark(request.code)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_request_and_why() {
        let clean = remark(306);
        assert!(clean.starts_with(" request type 306 (CLEAN_EXPIRED_CONSUMEQUEUE) not supported"));
        assert!(clean.contains("itself"), "{clean}");
        assert!(remark(61).contains("(GET_TIMER_METRICS) not supported by Ferrocket"));
        assert_eq!(remark(987_654), " request type 987654 not supported");
        let request = RemotingCommand::request(5001);
        let answer = answer(&request);
        assert_eq!(answer.code, response_code::REQUEST_CODE_NOT_SUPPORTED);
        assert!(answer.remark.unwrap().contains("SWITCH_TIMER_ENGINE"));
    }

    #[test]
    fn each_code_is_listed_once() {
        let mut codes: Vec<i32> = REFUSED.iter().map(|(c, _, _)| *c).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), REFUSED.len());
    }
}
