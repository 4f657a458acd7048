//! A shard's state, grouped by concern (the Seastar `sharded<T>` idea):
//! each group is a private field of [`Shard`], reached through the
//! methods below, so no handler holds a field of the shard directly
//! (`scripts/check-structure.py` fails on a public field of `Shard`).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Weak;
use std::sync::Arc;

use ferrocket_runtime::server::Connection;
use ferrocket_runtime::shard::Replica;
use ferrocket_runtime::sync::StopSignal;
use ferrocket_runtime::task_set::TaskSet;
use ferrocket_store::ShardStore;

use super::{pop, role, BrokerEnv, Shard, ShardStats};
use crate::services::acl::VersionedCopy;
use crate::services::broker_stats::BrokerStats;
use crate::services::clients::{ClientTable, ConnInfo};
use crate::services::compaction::Compactions;
use crate::services::control::ControlPlane;
use crate::services::groups::GroupTable;
use crate::services::locks::LockTable;
use crate::services::long_poll::LongPolls;
use crate::services::metrics::ShardMetrics;
use crate::services::offsets::OffsetTable;
use crate::services::placed::PlacedServices;
use crate::services::request_modes::RequestModeTable;
use crate::services::schedule::ScheduleState;
use crate::services::topics::TopicTable;

/// This shard's copies of the control-plane tables (shard 0 writes them,
/// every shard reads its replica).
pub(super) struct Tables {
    pub(super) topics: Replica<TopicTable>,
    pub(super) clients: Replica<ClientTable>,
    pub(super) groups: Replica<GroupTable>,
    pub(super) request_modes: Replica<RequestModeTable>,
}

/// State of the queues this shard owns.
pub(super) struct Queues {
    /// Consumer offsets.
    pub(super) offsets: RefCell<OffsetTable>,
    /// Order locks.
    pub(super) locks: RefCell<LockTable>,
    /// Pulls held until a message arrives.
    pub(super) polls: LongPolls,
    /// Delay-level progress of the levels this shard owns.
    pub(super) schedule: ScheduleState,
    /// Pop checkpoints (`pop`).
    pub(super) pop: pop::PopStore,
    /// Compacted files of the compaction-topic queues.
    pub(super) compaction: Compactions,
}

/// The shard's life: its loops, its stop signal and, on shard 0, the
/// role's loops and the control-plane writer.
pub(super) struct Lifecycle {
    /// Fired when the shard starts stopping (background loops end).
    pub(super) stopping: StopSignal,
    /// The shard's background loops (`tasks`).
    pub(super) tasks: TaskSet,
    /// Shard 0: the loops of the role in force (controller mode changes
    /// it in place).
    pub(super) role: role::RoleTasks,
    /// The control-plane writer; on shard 0 only.
    pub(super) control: Option<ControlPlane>,
}

/// This shard's copies of the access rules (`shard::access`).
#[derive(Default)]
pub(super) struct Security {
    /// The ACL 1.0 config in force.
    pub(super) acl: VersionedCopy<ferrocket_acl::AclConfig>,
    /// ACL 2.0's users and ACLs.
    pub(super) auth: VersionedCopy<ferrocket_acl::auth::AuthMetadata>,
}

/// What this shard counts.
#[derive(Default)]
pub(super) struct Counters {
    /// GET_BROKER_RUNTIME_INFO's counters.
    pub(super) stats: Cell<ShardStats>,
    /// `/metrics` (`services::metrics`).
    pub(super) metrics: ShardMetrics,
    /// The minute, hour and day windows (VIEW_BROKER_STATS_DATA).
    pub(super) broker_stats: BrokerStats,
}

/// This shard's connections.
#[derive(Default)]
pub(super) struct Connections {
    /// Open connections, by id.
    pub(super) open: RefCell<HashMap<u64, Weak<Connection>>>,
    /// What they said about themselves in heartbeats.
    pub(super) infos: RefCell<HashMap<u64, ConnInfo>>,
}

/// Where the shard is and what it shares.
impl Shard {
    /// This shard's number, `0..count()`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// How many shards the broker runs.
    pub fn count(&self) -> usize {
        self.count
    }

    /// What every shard shares, fixed at start.
    pub fn env(&self) -> &Arc<BrokerEnv> {
        &self.env
    }

    /// This shard's part of the store.
    pub fn store(&self) -> &ShardStore {
        &self.store
    }

    /// Timer, index and transaction services this shard runs (`system`).
    pub fn services(&self) -> &PlacedServices {
        &self.services
    }
}

/// The replicated tables ([`Tables`]).
impl Shard {
    pub fn topics(&self) -> &Replica<TopicTable> {
        &self.tables.topics
    }

    pub fn clients(&self) -> &Replica<ClientTable> {
        &self.tables.clients
    }

    pub fn groups(&self) -> &Replica<GroupTable> {
        &self.tables.groups
    }

    pub fn request_modes(&self) -> &Replica<RequestModeTable> {
        &self.tables.request_modes
    }
}

/// The owned queues' state ([`Queues`]).
impl Shard {
    pub fn offsets(&self) -> &RefCell<OffsetTable> {
        &self.queues.offsets
    }

    pub fn locks(&self) -> &RefCell<LockTable> {
        &self.queues.locks
    }

    pub fn polls(&self) -> &LongPolls {
        &self.queues.polls
    }

    pub fn schedule(&self) -> &ScheduleState {
        &self.queues.schedule
    }

    pub fn pop(&self) -> &pop::PopStore {
        &self.queues.pop
    }

    pub fn compaction(&self) -> &Compactions {
        &self.queues.compaction
    }
}

/// The shard's life ([`Lifecycle`]).
impl Shard {
    pub fn stopping(&self) -> &StopSignal {
        &self.lifecycle.stopping
    }

    pub fn tasks(&self) -> &TaskSet {
        &self.lifecycle.tasks
    }

    pub(crate) fn role(&self) -> &role::RoleTasks {
        &self.lifecycle.role
    }

    /// The control-plane writer, on shard 0 (`None` elsewhere); see also
    /// [`Shard::control`], which rejects the call off shard 0.
    pub fn control_plane(&self) -> Option<&ControlPlane> {
        self.lifecycle.control.as_ref()
    }
}

/// Access rules, counters and connections ([`Security`], [`Counters`],
/// [`Connections`]).
impl Shard {
    pub fn acl(&self) -> &VersionedCopy<ferrocket_acl::AclConfig> {
        &self.security.acl
    }

    pub fn auth(&self) -> &VersionedCopy<ferrocket_acl::auth::AuthMetadata> {
        &self.security.auth
    }

    pub fn stats(&self) -> &Cell<ShardStats> {
        &self.counters.stats
    }

    pub fn metrics(&self) -> &ShardMetrics {
        &self.counters.metrics
    }

    pub fn broker_stats(&self) -> &BrokerStats {
        &self.counters.broker_stats
    }

    /// What this shard's connections said about themselves in heartbeats.
    pub fn conn_infos(&self) -> &RefCell<HashMap<u64, ConnInfo>> {
        &self.connections.infos
    }
}
