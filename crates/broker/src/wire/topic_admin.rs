//! Topic administration (UPDATE_AND_CREATE_TOPIC 17, GET_ALL_TOPIC_CONFIG 21,
//! GET_TOPIC_CONFIG 351, DELETE_TOPIC_IN_BROKER 215,
//! GET_SYSTEM_TOPIC_LIST_FROM_BROKER 305) and GET_BROKER_RUNTIME_INFO (28)
//! (`AdminBrokerProcessor`).

use std::rc::Rc;
use std::sync::atomic::Ordering;

use ferrocket_protocol::body::{encode_json, KvTable, TopicConfig, TopicList};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::{CreateTopicRequestHeader, TopicRequestHeader};
use ferrocket_protocol::RemotingCommand;

use ferrocket_runtime::shard::ShardCall;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::delay_levels::DelayOffsetFile;
use crate::services::topic_attributes;
use crate::services::topics::{check_admin_topic, is_system_topic, TopicChange};
use crate::shard::{stats, Shard};

/// Version string reported by GET_BROKER_RUNTIME_INFO.
pub const BROKER_VERSION_DESC: &str = concat!("ferrocket-", env!("CARGO_PKG_VERSION"));

fn ok(request: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(request, response_code::SUCCESS, None)
}

/// UPDATE_AND_CREATE_TOPIC.
pub(crate) async fn update_and_create_topic(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = CreateTopicRequestHeader::from_ext(&request.ext_fields)?;
    check_admin_topic(&header.topic)?;
    let mut topic = TopicConfig::new(&header.topic, header.write_queue_nums);
    topic.read_queue_nums = header.read_queue_nums;
    topic.perm = header.perm;
    if let Some(filter) = header.topic_filter_type.filter(|f| !f.is_empty()) {
        topic.topic_filter_type = filter;
    }
    topic.topic_sys_flag = header.topic_sys_flag.unwrap_or(0);
    topic.order = header.order;
    let current = shard.with_topic(&header.topic, |t| t.attributes.clone());
    let modification = header.attributes.as_deref().unwrap_or("");
    topic.attributes =
        topic_attributes::alter(current.as_ref(), modification).map_err(Reject::system)?;
    shard.change_topic(TopicChange::Upsert(topic)).await?;
    Ok(ok(request))
}

/// GET_ALL_TOPIC_CONFIG: the table with its data version.
pub(crate) fn all_topic_config(shard: &Shard, request: &RemotingCommand) -> RemotingCommand {
    ok(request).with_body(encode_json(&*shard.topics().get()))
}

/// RocketMQ's GET_SYSTEM_TOPIC_LIST_FROM_BROKER.
pub(crate) const GET_SYSTEM_TOPIC_LIST_FROM_BROKER: i32 = 305;

/// GET_SYSTEM_TOPIC_LIST_FROM_BROKER: this broker's internal topics (the
/// system topics and its cluster and broker name topics), which mqadmin's
/// exportMetadata and exportMetrics leave out (Java answers its static
/// system topic set, which holds the same names).
pub(crate) fn system_topics(shard: &Shard, request: &RemotingCommand) -> RemotingCommand {
    let config = shard.config();
    let topic_list = shard.topics().with(|table| {
        table
            .topic_config_table
            .keys()
            .filter(|t| {
                is_system_topic(t) || **t == config.broker_cluster_name || **t == config.broker_name
            })
            .cloned()
            .collect()
    });
    let body = TopicList {
        topic_list,
        broker_addr: None,
    };
    ok(request).with_body(encode_json(&body))
}

/// GET_TOPIC_CONFIG.
pub(crate) fn topic_config(
    shard: &Shard,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = TopicRequestHeader::from_ext(&request.ext_fields)?;
    match shard.topic(&header.topic) {
        Some(topic) => Ok(ok(request).with_body(encode_json(&topic))),
        None => Err(Reject::new(
            response_code::TOPIC_NOT_EXIST,
            format!("No topic in this broker. topic: {}", header.topic),
        )),
    }
}

/// DELETE_TOPIC_IN_BROKER: removes the topic, every group's offsets of it
/// and its ConsumeQueues (each owner shard deletes its own). Its records
/// stay in the CommitLog until retention removes them.
pub(crate) async fn delete_topic(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = TopicRequestHeader::from_ext(&request.ext_fields)?;
    check_admin_topic(&header.topic)?;
    shard
        .change_topic(TopicChange::Delete(header.topic.clone()))
        .await?;
    for answer in shard.call_all(ForgetTopic(header.topic.clone())).await {
        if let Err(reject) = answer {
            tracing::warn!(remark = %reject.remark, "a shard kept offsets of a deleted topic");
        }
    }
    Ok(ok(request))
}

/// On every shard: drop the offsets and ConsumeQueues of a deleted topic.
#[derive(Clone)]
struct ForgetTopic(String);

impl ShardCall<Shard> for ForgetTopic {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        let topic = self.0;
        shard.offsets().borrow_mut().forget_topic(&topic);
        // The topic's ConsumeQueues this shard owns go too, so a re-created
        // topic starts at offset 0.
        if let Err(e) = shard.store().delete_topic_queues(&topic) {
            tracing::error!(%topic, error = %e, "cannot delete ConsumeQueues");
        }
        shard.forget_compacted_topic(&topic);
    }
}

/// Said after `tieredStoreStatus` when the S3 store refuses conditional
/// writes (the manifest is then written after a read's check only).
const CONDITIONAL_WRITES_UNSUPPORTED: &str =
    "; conditional writes unsupported by the object store (the set's manifest is checked by a read before each write)";

/// Tiered storage's state (Ferrocket's own keys), when it is on.
fn tier_info(reader: &ferrocket_store::CommitLogReader, put: &mut impl FnMut(&str, String)) {
    let Some(tier) = reader.tier() else {
        return;
    };
    use ferrocket_store::tier::TierStatus;
    let status = &tier.status;
    put("tieredStorageLevel", "NOT_IN_DISK".to_string());
    put("tieredMinOffset", reader.logical_min_offset().to_string());
    put("tieredOffloadedSegments", tier.offloaded.len().to_string());
    let pending = reader.tier_pending_segments().unwrap_or(0);
    put("tieredPendingSegments", pending.to_string());
    let counters = [
        ("tieredUploadedSegments", &status.uploaded_segments),
        ("tieredUploadFailures", &status.upload_failures),
        ("tieredDroppedSegments", &status.dropped_segments),
        (
            "tieredRemoteDeletedSegments",
            &status.remote_deleted_segments,
        ),
        ("tieredRemoteReads", &status.remote_reads),
        ("tieredRemoteReadFailures", &status.remote_read_failures),
    ];
    for (key, counter) in counters {
        put(key, TierStatus::get(counter).to_string());
    }
    let error = status.last_error();
    let mut said = match error.is_empty() {
        true => "ok".to_string(),
        false => format!("segments stay local: {error}"),
    };
    if status
        .conditional_writes_unsupported
        .load(Ordering::Relaxed)
    {
        said.push_str(CONDITIONAL_WRITES_UNSUPPORTED);
    }
    put("tieredStoreStatus", said);
}

/// GET_BROKER_RUNTIME_INFO: a few counters summed over the shards.
pub(crate) async fn runtime_info(shard: &Rc<Shard>, request: &RemotingCommand) -> RemotingCommand {
    let total = stats::broker_totals(shard).await;
    let (put_tps, got_tps) = shard.call(0, stats::Rates).await.unwrap_or_default();
    let env = &shard.env();
    let reader = shard.store().reader();
    let mut table = KvTable::default();
    let mut put = |key: &str, value: String| {
        table.table.insert(key.to_string(), value);
    };
    put("brokerVersionDesc", BROKER_VERSION_DESC.to_string());
    put(
        "brokerVersion",
        ferrocket_protocol::frame::VERSION_DEFAULT.to_string(),
    );
    put("bootTimestamp", env.boot_ms.to_string());
    put("runtime", format!("{} ms", now_ms() - env.boot_ms));
    put("putTps", put_tps);
    // Java 4.x's spelling, and 5.x's: tools read one or the other.
    put("getTransferredTps", got_tps.clone());
    put("getTransferedTps", got_tps);
    put("msgPutTotalTodayNow", total.put_messages.to_string());
    put("msgGetTotalTodayNow", total.got_messages.to_string());
    let mornings = shard
        .call(0, stats::MorningTotals)
        .await
        .unwrap_or_default();
    put("msgPutTotalTodayMorning", mornings.put_today.to_string());
    put(
        "msgPutTotalYesterdayMorning",
        mornings.put_yesterday.to_string(),
    );
    put("msgGetTotalTodayMorning", mornings.got_today.to_string());
    put(
        "msgGetTotalYesterdayMorning",
        mornings.got_yesterday.to_string(),
    );
    put("putMessageTotalBytes", total.put_bytes.to_string());
    put("pullHoldingCount", total.held_pulls.to_string());
    put(
        "skippedRedeliveryCount",
        total.skipped_redeliveries.to_string(),
    );
    put("commitLogMinOffset", reader.min_offset().to_string());
    put("commitLogMaxOffset", reader.written_offset().to_string());
    tier_info(&reader, &mut put);
    // Ferrocket's own key: `cluster list` shows each broker's role.
    put(
        "brokerRole",
        shard.config().replication.broker_role.name().to_string(),
    );
    put(
        "commitLogFlushedOffset",
        reader.durable_offset().to_string(),
    );
    put("shardCount", shard.count().to_string());
    // Java's key: whether the master's special services run here (a
    // master's always; a slave's while it acts as master).
    let acting = &env.acting;
    let active = !shard.config().replication.broker_role.is_slave() || acting.is_acting();
    put("brokerActive", active.to_string());
    // Ferrocket's own keys: the set's lowest id as this broker last learnt
    // it, and the NOTIFY_MIN_BROKER_ID_CHANGE requests it took.
    put("minBrokerIdInGroup", acting.min_broker().0.to_string());
    put("minBrokerIdNotices", acting.notices_received().to_string());
    put("brokerName", env.config.broker_name.clone());
    put("brokerAddr", env.broker_addr.clone());
    // Ferrocket's own key: where slaves connect, so that a controller-mode
    // slave follows the master the controller names, not a stale route.
    if let Some(ha) = crate::tasks::namesrv_register::ha_server_addr(shard) {
        put("haServerAddr", ha);
    }
    ok(request).with_body(encode_json(&table))
}

/// GET_ALL_DELAY_OFFSET: every level's delivery progress.
pub(crate) async fn all_delay_offsets(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let (offsets, _) = shard
        .delay_progress(false)
        .await
        .ok_or_else(|| Reject::system("a shard did not report its delay progress"))?;
    let file = DelayOffsetFile {
        offset_table: offsets,
        data_version: *shard.schedule().data_version.borrow(),
    };
    Ok(
        RemotingCommand::response_to(request, response_code::SUCCESS, None)
            .with_body(encode_json(&file)),
    )
}
