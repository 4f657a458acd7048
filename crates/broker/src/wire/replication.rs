//! GET_BROKER_HA_STATUS (907, `AdminBrokerProcessor.getBrokerHaStatus`):
//! the HA links as JSON `HARuntimeInfo`, from shard 0, which runs them.

use std::rc::Rc;

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
        let written = shard.store.reader().written_offset();
        let info = control.ha.runtime_info(
            !config.broker_role.is_slave(),
            written,
            config.ha_max_gap_not_in_sync_bytes,
        );
        serde_json::to_vec(&info).map_err(|e| Reject::system(e.to_string()))
    }
}
