//! What a send does about slaves: a slave refuses every put (RocketMQ's
//! `HookUtils`: SERVICE_NOT_AVAILABLE), and a SYNC_MASTER send with
//! `WAIT=true` is answered once enough slaves hold it
//! (`GroupTransferService`), through shard 0, which runs the HA links.

use std::rc::Rc;

use ferrocket_protocol::codes::response_code;
use ferrocket_runtime::shard::ShardCall;
use ferrocket_store::{AppendResult, AppendStatus};

use super::Shard;
use crate::error::Reject;
use crate::services::replication::ReplicaWait;

impl Shard {
    /// A slave takes messages only from its master's HA stream.
    pub fn check_accepts_puts(&self) -> Result<(), Reject> {
        let config = self.config();
        if self.env.role.too_few_in_sync(&config.controller_mode) {
            // Java: IN_SYNC_REPLICAS_NOT_ENOUGH, answered as SYSTEM_ERROR.
            return Err(Reject::new(
                response_code::SYSTEM_ERROR,
                "in-sync replicas not enough (minInSyncReplicas)",
            ));
        }
        if config.replication.broker_role.is_slave() {
            return Err(Reject::new(
                response_code::SERVICE_NOT_AVAILABLE,
                "this broker is a slave (brokerRole=SLAVE): messages are put to the master, brokerId 0",
            ));
        }
        Ok(())
    }

    /// Under SYNC_MASTER, waits until `inSyncReplicas` copies hold the
    /// records of `result` (at most `slaveTimeout`); a send that could not
    /// wait or waited in vain is still stored, and says so in its status,
    /// as does one on a controller-mode master whose lease lapsed
    /// ([`crate::role::state::MasterLease`]).
    /// Every send waiting at once is served by the same slave acks (group
    /// commit).
    pub async fn await_replicas(&self, result: &mut AppendResult, wait_store_ok: bool) {
        let config = self.config();
        let ha = &config.replication;
        let role = &self.env.role;
        let copies = match config.controller_mode.enabled {
            true => role.required_copies(&config.controller_mode, ha.in_sync_replicas),
            false => ha.ack_copies(),
        };
        if copies <= 1 || !wait_store_ok || result.status != AppendStatus::Ok {
            return;
        }
        let end = result.physical_offset + i64::from(result.total_bytes);
        let mode = &config.controller_mode;
        let among = (mode.enabled && mode.all_ack_in_sync_state_set).then(|| role.in_sync.ids());
        let call = WaitReplicas {
            end,
            copies,
            among,
            timeout_ms: ha.slave_timeout_ms,
        };
        let replicated = self.call(0, call).await;
        // Checked once the copies are in: a master whose lease lapsed while
        // it waited may have been deposed, and its copies with it.
        if !role.may_acknowledge(mode, copies) {
            tracing::debug!(
                end,
                "not acknowledged: no controller confirmed this master within its lease"
            );
            result.status = AppendStatus::FlushSlaveTimeout;
            return;
        }
        result.status = match replicated {
            Ok(ReplicaWait::Replicated) => AppendStatus::Ok,
            Ok(ReplicaWait::NotAvailable) => AppendStatus::SlaveNotAvailable,
            Ok(ReplicaWait::Timeout) | Err(_) => AppendStatus::FlushSlaveTimeout,
        };
    }
}

/// `WAIT` unset means true (`Message.isWaitStoreMsgOK`).
pub(crate) fn wait_store_ok(props: &ferrocket_protocol::properties::Properties) -> bool {
    wait_value_ok(props.get(ferrocket_protocol::properties::WAIT))
}

/// [`wait_store_ok`] from the `WAIT` value.
pub(crate) fn wait_value_ok(wait: Option<&str>) -> bool {
    wait.is_none_or(|v| !v.trim().eq_ignore_ascii_case("false"))
}

/// On shard 0: waits for the slaves' acks past `end`.
struct WaitReplicas {
    end: i64,
    copies: u32,
    /// Controller mode with `allAckInSyncStateSet`: only these slaves count.
    among: Option<std::sync::Arc<std::collections::BTreeSet<i64>>>,
    timeout_ms: u64,
}

impl ShardCall<Shard> for WaitReplicas {
    type Reply = ReplicaWait;

    async fn run(self, shard: Rc<Shard>) -> ReplicaWait {
        let Ok(control) = shard.control() else {
            return ReplicaWait::NotAvailable;
        };
        let written = shard.store.reader().written_offset();
        let gap_max = shard.config().replication.ha_max_gap_not_in_sync_bytes;
        if !control.ha.slave_available(written, gap_max) {
            return ReplicaWait::NotAvailable;
        }
        control
            .ha
            .wait(
                self.end,
                self.copies,
                self.among.as_deref(),
                self.timeout_ms,
            )
            .await
    }
}
