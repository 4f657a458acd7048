//! Shard 0's control-plane state: the master copies of the single-writer
//! tables, the name server client and the shutdown rendezvous.

use crate::services::replication::HaState;
use crate::services::request_modes::RequestModeTable;
use std::cell::RefCell;
use std::collections::BTreeMap;

use ferrocket_runtime::shard::{Master, Versioned};
use ferrocket_runtime::sync::Notify;

use crate::config::BrokerConfig;
use crate::services::clients::ClientTable;
use crate::services::groups::GroupTable;
use crate::services::namesrv::NamesrvClient;
use crate::services::offsets::OffsetMap;
use crate::services::throughput::Throughput;
use crate::services::topics::TopicTable;

/// Shard 0's writer state of the control plane.
pub(crate) struct ControlPlane {
    pub topics: Master<TopicTable>,
    pub clients: Master<ClientTable>,
    pub groups: Master<GroupTable>,
    pub request_modes: Master<RequestModeTable>,
    /// Wakes the name server registration loop (topics changed).
    pub register_now: Notify,
    /// At shutdown: every shard's final offsets, by shard.
    pub stopped: RefCell<BTreeMap<usize, OffsetMap>>,
    pub stopped_notify: Notify,
    /// Connections to the name servers (and, on a slave, to its master).
    pub namesrv: NamesrvClient,
    /// Master/slave links (`services::replication`).
    pub ha: HaState,
    /// Messages in and out per second, sampled once a second.
    pub throughput: RefCell<Throughput>,
    /// The settings in force, changed by UPDATE_BROKER_CONFIG.
    pub settings: Master<BrokerConfig>,
    /// Topics' queues over every broker, from the name servers
    /// (QUERY_ASSIGNMENT).
    pub routes: RefCell<crate::services::assignment::RouteCache>,
}

impl ControlPlane {
    pub fn new(
        topics: Versioned<TopicTable>,
        clients: Versioned<ClientTable>,
        groups: Versioned<GroupTable>,
        request_modes: Versioned<RequestModeTable>,
        namesrv: NamesrvClient,
        settings: BrokerConfig,
    ) -> Self {
        Self {
            topics: Master::new(topics),
            clients: Master::new(clients),
            groups: Master::new(groups),
            request_modes: Master::new(request_modes),
            register_now: Notify::default(),
            stopped: RefCell::new(BTreeMap::new()),
            stopped_notify: Notify::default(),
            namesrv,
            ha: HaState::default(),
            throughput: RefCell::default(),
            routes: RefCell::default(),
            settings: Master::new(Versioned {
                version: 0,
                value: std::sync::Arc::new(settings),
            }),
        }
    }
}
