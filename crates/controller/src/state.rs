//! What the controller replicates: per broker set, its members, its master
//! and master epoch, and its in-sync replicas with their epoch (RocketMQ's
//! `BrokerReplicaInfo` and `SyncStateInfo`). It changes only by applying
//! [`Event`]s in log order, so every controller that applied the same log
//! holds the same state.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The first broker id the controller hands out (`MixAll.FIRST_BROKER_CONTROLLER_ID`).
pub const FIRST_BROKER_ID: i64 = 1;

/// One member of a broker set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub address: String,
    /// `"address;millis"` from the broker's APPLY_BROKER_ID, so that the
    /// same broker may apply for its id again.
    pub register_check_code: String,
}

/// One broker set (all brokers sharing a `brokerName`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerSet {
    pub cluster_name: String,
    pub broker_name: String,
    pub members: BTreeMap<i64, Member>,
    /// The id GET_NEXT_BROKER_ID answers: one more per id ever applied.
    pub next_broker_id: i64,
    pub master_id: Option<i64>,
    /// Raised by every election, also one that found no master; 0 means
    /// the set never had a master.
    pub master_epoch: i32,
    pub sync_state_set: BTreeSet<i64>,
    pub sync_state_set_epoch: i32,
}

impl BrokerSet {
    fn new(cluster_name: &str, broker_name: &str) -> Self {
        Self {
            cluster_name: cluster_name.to_string(),
            broker_name: broker_name.to_string(),
            members: BTreeMap::new(),
            next_broker_id: FIRST_BROKER_ID,
            master_id: None,
            master_epoch: 0,
            sync_state_set: BTreeSet::new(),
            sync_state_set_epoch: 0,
        }
    }

    /// The address of a member, if it is one.
    pub fn address(&self, broker_id: Option<i64>) -> Option<&str> {
        broker_id
            .and_then(|id| self.members.get(&id))
            .map(|m| m.address.as_str())
    }

    pub fn is_first_election(&self) -> bool {
        self.master_epoch == 0
    }

    fn set_master(&mut self, master_id: Option<i64>) {
        self.master_id = master_id;
        self.master_epoch += 1;
    }

    fn set_sync_state_set(&mut self, set: BTreeSet<i64>) {
        self.sync_state_set = set;
        self.sync_state_set_epoch += 1;
    }
}

/// A change to the replicated state: what the log carries (RocketMQ's
/// `EventMessage` kinds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "camelCase")]
pub enum Event {
    AlterSyncStateSet {
        broker_name: String,
        sync_state_set: BTreeSet<i64>,
    },
    ApplyBrokerId {
        cluster_name: String,
        broker_name: String,
        broker_address: String,
        broker_id: i64,
        register_check_code: String,
    },
    /// `master_id` None: the old master is gone and nobody could replace it.
    ElectMaster {
        broker_name: String,
        master_id: Option<i64>,
    },
    /// `broker_ids` None: forget the whole set.
    CleanBrokerData {
        broker_name: String,
        broker_ids: Option<BTreeSet<i64>>,
    },
    UpdateBrokerAddress {
        broker_name: String,
        broker_id: i64,
        broker_address: String,
    },
}

/// Every broker set the controller knows, by broker name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControllerState {
    pub sets: BTreeMap<String, BrokerSet>,
}

impl ControllerState {
    pub fn set(&self, broker_name: &str) -> Option<&BrokerSet> {
        self.sets.get(broker_name)
    }

    /// Applies one event. Events were validated by the leader before they
    /// entered the log; one that no longer fits (its set was cleaned since)
    /// changes nothing, as in Java.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::AlterSyncStateSet {
                broker_name,
                sync_state_set,
            } => {
                if let Some(set) = self.sets.get_mut(broker_name) {
                    set.set_sync_state_set(sync_state_set.clone());
                }
            }
            Event::ApplyBrokerId {
                cluster_name,
                broker_name,
                broker_address,
                broker_id,
                register_check_code,
            } => {
                let set = self
                    .sets
                    .entry(broker_name.clone())
                    .or_insert_with(|| BrokerSet::new(cluster_name, broker_name));
                if !set.members.contains_key(broker_id) {
                    set.members.insert(
                        *broker_id,
                        Member {
                            address: broker_address.clone(),
                            register_check_code: register_check_code.clone(),
                        },
                    );
                    set.next_broker_id += 1;
                }
            }
            Event::ElectMaster {
                broker_name,
                master_id,
            } => {
                if let Some(set) = self.sets.get_mut(broker_name) {
                    set.set_master(*master_id);
                    if let Some(id) = master_id {
                        set.set_sync_state_set(BTreeSet::from([*id]));
                    }
                }
            }
            Event::CleanBrokerData {
                broker_name,
                broker_ids,
            } => self.clean(broker_name, broker_ids.as_ref()),
            Event::UpdateBrokerAddress {
                broker_name,
                broker_id,
                broker_address,
            } => {
                let member = self
                    .sets
                    .get_mut(broker_name)
                    .and_then(|set| set.members.get_mut(broker_id));
                if let Some(member) = member {
                    member.address = broker_address.clone();
                }
            }
        }
    }

    fn clean(&mut self, broker_name: &str, broker_ids: Option<&BTreeSet<i64>>) {
        let Some(ids) = broker_ids.filter(|ids| !ids.is_empty()) else {
            self.sets.remove(broker_name);
            return;
        };
        let Some(set) = self.sets.get_mut(broker_name) else {
            return;
        };
        for id in ids {
            set.members.remove(id);
            set.sync_state_set.remove(id);
        }
        if set.members.is_empty() || set.sync_state_set.is_empty() {
            self.sets.remove(broker_name);
        }
    }
}
