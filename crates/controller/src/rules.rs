//! How the controller answers each request that reads or changes the
//! replicated state (RocketMQ's `ReplicasInfoManager` and
//! `DefaultElectPolicy`). A rule only decides: it returns the answer and the
//! events to replicate; nothing changes until those events are committed
//! and applied. Rules run one at a time on the leader.

use std::collections::BTreeSet;

use ferrocket_protocol::body::{
    encode_json, BrokerMemberGroup, BrokerReplicasInfo, ElectMasterResponseBody, ReplicaIdentity,
    ReplicasInfo, SyncStateSet,
};
use ferrocket_protocol::codes::response_code as rc;
use ferrocket_protocol::header::controller::*;
use ferrocket_protocol::ExtFields;

use crate::state::{BrokerSet, ControllerState, Event, FIRST_BROKER_ID};

/// What the heartbeats say of one broker (RocketMQ's `BrokerLiveInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveInfo {
    pub epoch: i32,
    pub max_offset: i64,
    pub confirm_offset: i64,
    /// Lower wins among equals (`brokerElectionPriority`).
    pub election_priority: i32,
}

/// Which brokers are alive, from the heartbeats this controller received.
pub trait Liveness {
    /// The live info of a broker that is alive, else `None`.
    fn live(&self, cluster: &str, broker_name: &str, broker_id: i64) -> Option<LiveInfo>;

    fn is_alive(&self, cluster: &str, broker_name: &str, broker_id: i64) -> bool {
        self.live(cluster, broker_name, broker_id).is_some()
    }
}

/// An answer, before it becomes a Remoting response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    pub code: i32,
    pub remark: Option<String>,
    pub ext: ExtFields,
    pub body: Option<Vec<u8>>,
}

impl Reply {
    pub fn ok(ext: ExtFields) -> Self {
        Self {
            code: rc::SUCCESS,
            ext,
            ..Self::default()
        }
    }

    pub fn error(code: i32, remark: impl Into<String>) -> Self {
        Self {
            code,
            remark: Some(remark.into()),
            ..Self::default()
        }
    }

    fn with_body(mut self, body: Vec<u8>) -> Self {
        self.body = Some(body);
        self
    }
}

/// A rule's outcome: the answer, and the events to commit before it is sent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    pub reply: Reply,
    pub events: Vec<Event>,
}

impl From<Reply> for Decision {
    fn from(reply: Reply) -> Self {
        Self {
            reply,
            events: Vec::new(),
        }
    }
}

fn sync_state_body(set: &BrokerSet) -> Vec<u8> {
    encode_json(&SyncStateSet {
        sync_state_set: set.sync_state_set.clone(),
        sync_state_set_epoch: set.sync_state_set_epoch,
    })
}

fn not_registered(broker_name: &str) -> Decision {
    Reply::error(
        rc::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
        format!("broker set {broker_name} has not been registered"),
    )
    .into()
}

/// CONTROLLER_ALTER_SYNC_STATE_SET: the master proposes a new in-sync set.
pub fn alter_sync_state_set(
    state: &ControllerState,
    live: &dyn Liveness,
    request: &AlterSyncStateSetRequestHeader,
    proposed: &SyncStateSet,
) -> Decision {
    let name = &request.broker_name;
    let Some(set) = state.set(name) else {
        return Reply::error(
            rc::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
            "broker metadata does not exist",
        )
        .into();
    };
    if let Err(refusal) = check_alter(set, live, request, proposed) {
        return refusal.into();
    }
    let new_set = &proposed.sync_state_set;
    let epoch = set.sync_state_set_epoch + 1;
    let header = AlterSyncStateSetResponseHeader {
        new_sync_state_set_epoch: epoch,
    };
    let body = encode_json(&SyncStateSet {
        sync_state_set: new_set.clone(),
        sync_state_set_epoch: epoch,
    });
    Decision {
        reply: Reply::ok(header.to_ext()).with_body(body),
        events: vec![Event::AlterSyncStateSet {
            broker_name: name.clone(),
            sync_state_set: new_set.clone(),
        }],
    }
}

/// Java's checks of a proposed in-sync set, in Java's order: a change, from
/// the current master, of the current master and set epochs, of registered
/// live members, keeping the master.
fn check_alter(
    set: &BrokerSet,
    live: &dyn Liveness,
    request: &AlterSyncStateSetRequestHeader,
    proposed: &SyncStateSet,
) -> Result<(), Reply> {
    let new_set = &proposed.sync_state_set;
    if *new_set == set.sync_state_set {
        return Err(Reply::error(
            rc::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
            "the new sync-state set equals the current one",
        ));
    }
    if set.master_id.is_none() || set.master_id != request.master_broker_id {
        return Err(Reply::error(
            rc::CONTROLLER_INVALID_MASTER,
            format!(
                "the master is {:?}, not {:?}",
                set.master_id, request.master_broker_id
            ),
        ));
    }
    if request.master_epoch != Some(set.master_epoch) {
        return Err(Reply::error(
            rc::CONTROLLER_FENCED_MASTER_EPOCH,
            format!(
                "the master epoch is {}, not {:?}",
                set.master_epoch, request.master_epoch
            ),
        ));
    }
    if proposed.sync_state_set_epoch != set.sync_state_set_epoch {
        return Err(Reply::error(
            rc::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
            format!(
                "the sync-state set epoch is {}, not {}",
                set.sync_state_set_epoch, proposed.sync_state_set_epoch
            ),
        ));
    }
    for id in new_set {
        if !set.members.contains_key(id) {
            let remark = format!("replica {id} does not exist");
            return Err(Reply::error(rc::CONTROLLER_INVALID_REPLICAS, remark));
        }
        let Some(info) = live.live(&set.cluster_name, &set.broker_name, *id) else {
            let remark = format!("replica {id} is not alive");
            return Err(Reply::error(rc::CONTROLLER_BROKER_NOT_ALIVE, remark));
        };
        // Ferrocket's check beyond Java's: a replica joining the set can
        // hold only epochs this set's masters wrote, so never a newer one
        // than the master's (the master admits only replicas that copy it:
        // `crates/broker/src/role/isr.rs`).
        if !set.sync_state_set.contains(id) && info.epoch > set.master_epoch {
            let remark = format!(
                "replica {id} reports epoch {}, newer than the master's {}: its log is not this master's",
                info.epoch, set.master_epoch
            );
            return Err(Reply::error(rc::CONTROLLER_INVALID_REPLICAS, remark));
        }
    }
    let master = set.master_id.unwrap_or(-1);
    if !new_set.contains(&master) {
        return Err(Reply::error(
            rc::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
            format!("the new sync-state set does not contain the master {master}"),
        ));
    }
    Ok(())
}

/// Whom an election picks among `candidates` (`DefaultElectPolicy.tryElect`):
/// the old master while it is still valid and nobody is preferred; else the
/// preferred id if valid; else the highest epoch, then the highest max
/// offset, then the lowest election priority, then the lowest id.
fn try_elect(
    set: &BrokerSet,
    live: &dyn Liveness,
    candidates: &BTreeSet<i64>,
    preferred: Option<i64>,
) -> Option<i64> {
    let alive: Vec<(i64, LiveInfo)> = candidates
        .iter()
        .filter_map(|id| {
            live.live(&set.cluster_name, &set.broker_name, *id)
                .map(|info| (*id, info))
        })
        .collect();
    let valid = |id: i64| alive.iter().any(|(alive_id, _)| *alive_id == id);
    if let Some(old) = set.master_id {
        if valid(old) && preferred.is_none_or(|p| p == old) {
            return Some(old);
        }
    }
    if let Some(preferred) = preferred {
        return valid(preferred).then_some(preferred);
    }
    alive
        .iter()
        .min_by_key(|(id, info)| {
            (
                std::cmp::Reverse(info.epoch),
                std::cmp::Reverse(info.max_offset),
                info.election_priority,
                *id,
            )
        })
        .map(|(id, _)| *id)
}

/// CONTROLLER_ELECT_MASTER, from a broker (its own id) or from the
/// controller itself (`brokerId` -1 or absent).
pub fn elect_master(
    state: &ControllerState,
    live: &dyn Liveness,
    request: &ElectMasterRequestHeader,
    elect_unclean: bool,
) -> Decision {
    let Some(set) = state.set(&request.broker_name) else {
        return not_registered(&request.broker_name);
    };
    let requester = request.broker_id.filter(|id| *id != -1);
    let mut new_master = if set.is_first_election() {
        requester
    } else {
        None
    };
    if new_master.is_none() {
        let preferred = requester.filter(|_| request.designate_elect);
        new_master = try_elect(set, live, &set.sync_state_set, preferred);
        if new_master.is_none() && elect_unclean {
            let all: BTreeSet<i64> = set.members.keys().copied().collect();
            new_master = try_elect(set, live, &all, preferred);
        }
    }
    match new_master {
        Some(id) if Some(id) == set.master_id => master_still_exists(set),
        Some(id) => elected(set, id),
        None if requester.is_none() => Decision {
            reply: Reply::error(
                rc::CONTROLLER_MASTER_NOT_AVAILABLE,
                "the old master is down and no new master could be elected",
            ),
            events: vec![Event::ElectMaster {
                broker_name: set.broker_name.clone(),
                master_id: None,
            }],
        },
        None => Reply::error(
            rc::CONTROLLER_ELECT_MASTER_FAILED,
            "failed to elect a new master",
        )
        .into(),
    }
}

fn master_still_exists(set: &BrokerSet) -> Decision {
    let header = ElectMasterResponseHeader {
        master_broker_id: set.master_id,
        master_address: set.address(set.master_id).map(str::to_string),
        master_epoch: Some(set.master_epoch),
        sync_state_set_epoch: Some(set.sync_state_set_epoch),
    };
    let body = encode_json(&ElectMasterResponseBody {
        broker_member_group: None,
        sync_state_set: set.sync_state_set.clone(),
    });
    let mut reply = Reply::ok(header.to_ext()).with_body(body);
    reply.code = rc::CONTROLLER_MASTER_STILL_EXIST;
    reply.remark = Some(format!(
        "the old master {:?} of {} is still alive",
        set.master_id, set.broker_name
    ));
    reply.into()
}

/// The member group of a set, as election answers and notifications carry it.
pub fn member_group(set: &BrokerSet) -> BrokerMemberGroup {
    BrokerMemberGroup {
        cluster: set.cluster_name.clone(),
        broker_name: set.broker_name.clone(),
        broker_addrs: set
            .members
            .iter()
            .map(|(id, m)| (*id, m.address.clone()))
            .collect(),
    }
}

fn elected(set: &BrokerSet, master: i64) -> Decision {
    let header = ElectMasterResponseHeader {
        master_broker_id: Some(master),
        master_address: set.address(Some(master)).map(str::to_string),
        master_epoch: Some(set.master_epoch + 1),
        sync_state_set_epoch: Some(set.sync_state_set_epoch + 1),
    };
    let body = encode_json(&ElectMasterResponseBody {
        broker_member_group: Some(member_group(set)),
        sync_state_set: BTreeSet::from([master]),
    });
    Decision {
        reply: Reply::ok(header.to_ext()).with_body(body),
        events: vec![Event::ElectMaster {
            broker_name: set.broker_name.clone(),
            master_id: Some(master),
        }],
    }
}

/// CONTROLLER_GET_NEXT_BROKER_ID.
pub fn next_broker_id(state: &ControllerState, request: &GetNextBrokerIdRequestHeader) -> Reply {
    let next = state
        .set(&request.broker_name)
        .map_or(FIRST_BROKER_ID, |set| set.next_broker_id);
    let header = GetNextBrokerIdResponseHeader {
        cluster_name: request.cluster_name.clone(),
        broker_name: request.broker_name.clone(),
        next_broker_id: next,
    };
    Reply::ok(header.to_ext())
}

/// CONTROLLER_APPLY_BROKER_ID: an unused id (or the first of a new set, or
/// an id this same broker applied for before) is granted.
pub fn apply_broker_id(state: &ControllerState, request: &ApplyBrokerIdRequestHeader) -> Decision {
    let id = request.applied_broker_id;
    let check_code = &request.register_check_code;
    let address = check_code.split(';').next().unwrap_or_default();
    let mut answer = ExtFields::new();
    answer.insert("clusterName", &request.cluster_name);
    answer.insert("brokerName", &request.broker_name);
    let granted = match state.set(&request.broker_name) {
        None => id == FIRST_BROKER_ID,
        Some(set) => match set.members.get(&id) {
            None => true,
            Some(member) => member.register_check_code == *check_code,
        },
    };
    if !granted {
        return Reply::error(
            rc::CONTROLLER_BROKER_ID_INVALID,
            format!(
                "broker id {id} cannot be applied for in broker set {}",
                request.broker_name
            ),
        )
        .into();
    }
    Decision {
        reply: Reply::ok(answer),
        events: vec![Event::ApplyBrokerId {
            cluster_name: request.cluster_name.clone(),
            broker_name: request.broker_name.clone(),
            broker_address: address.to_string(),
            broker_id: id,
            register_check_code: check_code.clone(),
        }],
    }
}

/// CONTROLLER_REGISTER_BROKER: a broker with an id says where it is; the
/// answer names the master when a live one exists.
pub fn register_broker(
    state: &ControllerState,
    live: &dyn Liveness,
    request: &RegisterBrokerToControllerRequestHeader,
) -> Decision {
    let name = &request.broker_name;
    let Some(set) = state.set(name) else {
        return not_registered(name);
    };
    let id = request.broker_id;
    let Some(member) = set.members.get(&id) else {
        return Reply::error(
            rc::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
            format!("broker id {id} has not been registered in broker set {name}"),
        )
        .into();
    };
    let mut header = RegisterBrokerToControllerResponseHeader {
        cluster_name: request.cluster_name.clone(),
        broker_name: name.clone(),
        ..Default::default()
    };
    if let Some(master) = set.master_id {
        if live.is_alive(&set.cluster_name, name, master) {
            header.master_broker_id = Some(master);
            header.master_address = set.address(Some(master)).map(str::to_string);
            header.master_epoch = Some(set.master_epoch);
            header.sync_state_set_epoch = Some(set.sync_state_set_epoch);
        }
    }
    let mut events = Vec::new();
    if member.address != request.broker_address {
        events.push(Event::UpdateBrokerAddress {
            broker_name: name.clone(),
            broker_id: id,
            broker_address: request.broker_address.clone(),
        });
    }
    Decision {
        reply: Reply::ok(header.to_ext()).with_body(sync_state_body(set)),
        events,
    }
}

/// CONTROLLER_GET_REPLICA_INFO.
pub fn replica_info(state: &ControllerState, request: &GetReplicaInfoRequestHeader) -> Reply {
    let Some(set) = state.set(&request.broker_name) else {
        return Reply::error(
            rc::CONTROLLER_BROKER_METADATA_NOT_EXIST,
            "broker metadata does not exist",
        );
    };
    let header = GetReplicaInfoResponseHeader {
        master_broker_id: set.master_id,
        master_address: set.address(set.master_id).map(str::to_string),
        master_epoch: Some(set.master_epoch),
    };
    Reply::ok(header.to_ext()).with_body(sync_state_body(set))
}

/// CONTROLLER_GET_SYNC_STATE_DATA for the named sets (unknown names are
/// left out).
pub fn sync_state_data(state: &ControllerState, live: &dyn Liveness, names: &[String]) -> Reply {
    let mut info = BrokerReplicasInfo::default();
    for name in names {
        let Some(set) = state.set(name) else { continue };
        let mut entry = ReplicasInfo {
            master_broker_id: set.master_id,
            master_address: set.address(set.master_id).map(str::to_string),
            master_epoch: set.master_epoch,
            sync_state_set_epoch: set.sync_state_set_epoch,
            ..Default::default()
        };
        for (id, member) in &set.members {
            let replica = ReplicaIdentity {
                broker_name: name.clone(),
                broker_id: *id,
                broker_address: member.address.clone(),
                alive: live.is_alive(&set.cluster_name, name, *id),
            };
            if set.sync_state_set.contains(id) {
                entry.in_sync_replicas.push(replica);
            } else {
                entry.not_in_sync_replicas.push(replica);
            }
        }
        info.replicas_info_table.insert(name.clone(), entry);
    }
    Reply::ok(ExtFields::new()).with_body(encode_json(&info))
}

/// CLEAN_BROKER_DATA: forgets dead brokers (or a whole set), refusing to
/// forget a live one unless `isCleanLivingBroker`.
pub fn clean_broker_data(
    state: &ControllerState,
    live: &dyn Liveness,
    request: &CleanControllerBrokerDataRequestHeader,
) -> Decision {
    let name = &request.broker_name;
    let refuse = |remark: String| -> Decision {
        Reply::error(rc::CONTROLLER_INVALID_CLEAN_BROKER_METADATA, remark).into()
    };
    let ids_text = request
        .broker_controller_ids_to_clean
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let mut ids = None;
    if let Some(text) = ids_text {
        let parsed: Result<BTreeSet<i64>, _> =
            text.split(';').map(|id| id.trim().parse::<i64>()).collect();
        match parsed {
            Ok(parsed) => ids = Some(parsed),
            Err(e) => return refuse(format!("brokerControllerIdsToClean `{text}`: {e}")),
        }
    }
    let set = state.set(name);
    if !request.is_clean_living_broker {
        if ids.is_none() && set.is_some_and(|s| s.master_id.is_some()) {
            return refuse(format!("broker set {name} is still alive"));
        }
        let cluster = request.cluster_name.as_deref().unwrap_or_default();
        let living = ids
            .iter()
            .flatten()
            .find(|id| live.is_alive(cluster, name, **id));
        if let Some(id) = living {
            return refuse(format!("broker {name} id {id} is still alive"));
        }
    }
    if set.is_none() {
        return refuse(format!("broker set {name} does not exist"));
    }
    Decision {
        reply: Reply::ok(ExtFields::new()),
        events: vec![Event::CleanBrokerData {
            broker_name: name.clone(),
            broker_ids: ids,
        }],
    }
}

/// The sets whose master is dead while another member lives: the leader
/// elects anew for each (`scanNeedReelectBrokerSets`).
pub fn sets_needing_election(state: &ControllerState, live: &dyn Liveness) -> Vec<String> {
    state
        .sets
        .values()
        .filter(|set| {
            let alive = |id: i64| live.is_alive(&set.cluster_name, &set.broker_name, id);
            set.master_id.is_some_and(|m| !alive(m)) && set.members.keys().any(|id| alive(*id))
        })
        .map(|set| set.broker_name.clone())
        .collect()
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
