//! GET_BROKER_HA_STATUS (907, `AdminBrokerProcessor.getBrokerHaStatus`):
//! the HA links as JSON `HARuntimeInfo`, from shard 0, which runs them.

use std::rc::Rc;

use ferrocket_protocol::body::{EpochEntryCache, EpochItem};
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;

use crate::error::Reject;
use crate::shard::Shard;

pub(crate) async fn ha_status(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let body = shard.call(0, HaStatus).await??;
    Ok(RemotingCommand::response_to(request, 0, None).with_body(body))
}

struct HaStatus;

impl ShardCall<Shard> for HaStatus {
    type Reply = Result<Vec<u8>, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let control = shard.control()?;
        let config = &shard.config().replication;
        let written = shard.store().reader().written_offset();
        let info = control.ha.runtime_info(
            !config.broker_role.is_slave(),
            written,
            config.ha_max_gap_not_in_sync_bytes,
        );
        serde_json::to_vec(&info).map_err(|e| Reject::system(e.to_string()))
    }
}

/// NOTIFY_BROKER_ROLE_CHANGED (1008, one-way from a controller): the set
/// has a new master. Whoever runs this broker in controller mode hears of
/// it and checks the role with the controller at once.
pub(crate) fn role_changed(shard: &Rc<Shard>, request: &RemotingCommand) -> RemotingCommand {
    let config = shard.config();
    if config.controller_mode.enabled {
        tracing::info!(
            master = request.ext_fields.get("masterBrokerId").unwrap_or("?"),
            epoch = request.ext_fields.get("masterEpoch").unwrap_or("?"),
            "the controller says the master changed"
        );
        shard.env().role.notices.notify();
    }
    RemotingCommand::response_to(request, 0, None)
}

/// GET_BROKER_EPOCH_CACHE (1007, `EpochEntryCache`): this broker's epoch
/// list with each entry's end (the next entry's start; the CommitLog's end
/// for the last), and the CommitLog's end. A slave in controller mode
/// mirrors its master's list for the bytes it holds.
pub(crate) fn epoch_cache(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let config = shard.config();
    let cache = config
        .epoch_file()
        .read()
        .map_err(|e| Reject::system(e.to_string()))?;
    let max_offset = shard.store().reader().written_offset();
    let entries = cache.entries();
    let epoch_list = entries
        .iter()
        .enumerate()
        .map(|(i, entry)| EpochItem {
            epoch: entry.epoch,
            start_offset: entry.start_offset,
            end_offset: entries
                .get(i + 1)
                .map_or(max_offset, |next| next.start_offset),
        })
        .collect();
    let body = EpochEntryCache {
        cluster_name: config.broker_cluster_name.clone(),
        broker_name: config.broker_name.clone(),
        broker_id: config.broker_id,
        epoch_list,
        max_offset,
    };
    let body = serde_json::to_vec(&body).map_err(|e| Reject::system(e.to_string()))?;
    Ok(RemotingCommand::response_to(request, 0, None).with_body(body))
}
