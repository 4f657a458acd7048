use std::collections::{BTreeSet, HashMap};

use ferrocket_protocol::body::{ElectMasterResponseBody, SyncStateSet};
use ferrocket_protocol::codes::response_code as rc;
use ferrocket_protocol::header::controller::*;

use super::*;
use crate::state::ControllerState;

/// Liveness from a table the test fills.
#[derive(Default)]
struct Alive(HashMap<i64, LiveInfo>);

impl Alive {
    fn with(mut self, id: i64, epoch: i32, max_offset: i64, priority: i32) -> Self {
        let info = LiveInfo {
            epoch,
            max_offset,
            confirm_offset: 0,
            election_priority: priority,
        };
        self.0.insert(id, info);
        self
    }
}

impl Liveness for Alive {
    fn live(&self, _cluster: &str, _name: &str, id: i64) -> Option<LiveInfo> {
        self.0.get(&id).copied()
    }
}

fn commit(state: &mut ControllerState, decision: &Decision) {
    for event in &decision.events {
        state.apply(event);
    }
}

fn apply_id(state: &mut ControllerState, id: i64, addr: &str) -> Decision {
    let request = ApplyBrokerIdRequestHeader {
        cluster_name: "c".into(),
        broker_name: "b".into(),
        applied_broker_id: id,
        register_check_code: format!("{addr};100"),
    };
    let decision = apply_broker_id(state, &request);
    commit(state, &decision);
    decision
}

fn elect(state: &mut ControllerState, live: &Alive, id: Option<i64>, designate: bool) -> Decision {
    let request = ElectMasterRequestHeader {
        broker_name: "b".into(),
        broker_id: id,
        designate_elect: designate,
        ..Default::default()
    };
    let decision = elect_master(state, live, &request, false);
    commit(state, &decision);
    decision
}

/// A set with members 1, 2, 3 and master 1.
fn three_members(live: &Alive) -> ControllerState {
    let mut state = ControllerState::default();
    for id in 1..=3 {
        assert_eq!(
            apply_id(&mut state, id, &format!("h:{id}")).reply.code,
            rc::SUCCESS
        );
    }
    assert_eq!(
        elect(&mut state, live, Some(1), false).reply.code,
        rc::SUCCESS
    );
    state
}

fn alter(
    state: &ControllerState,
    live: &Alive,
    master: i64,
    epoch: i32,
    ids: &[i64],
    set_epoch: i32,
) -> Decision {
    let request = AlterSyncStateSetRequestHeader {
        broker_name: "b".into(),
        master_broker_id: Some(master),
        master_epoch: Some(epoch),
        invoke_time: None,
    };
    let proposed = SyncStateSet {
        sync_state_set: ids.iter().copied().collect(),
        sync_state_set_epoch: set_epoch,
    };
    alter_sync_state_set(state, live, &request, &proposed)
}

#[test]
fn broker_ids_are_handed_out_in_order_and_kept_per_check_code() {
    let mut state = ControllerState::default();
    let next = |state: &ControllerState| {
        let request = GetNextBrokerIdRequestHeader {
            cluster_name: "c".into(),
            broker_name: "b".into(),
        };
        let reply = next_broker_id(state, &request);
        GetNextBrokerIdResponseHeader::from_ext(&reply.ext)
            .unwrap()
            .next_broker_id
    };
    assert_eq!(next(&state), 1);
    assert_eq!(
        apply_id(&mut state, 2, "h:2").reply.code,
        rc::CONTROLLER_BROKER_ID_INVALID
    );
    assert_eq!(apply_id(&mut state, 1, "h:1").reply.code, rc::SUCCESS);
    assert_eq!(next(&state), 2);
    assert_eq!(
        apply_id(&mut state, 1, "h:9").reply.code,
        rc::CONTROLLER_BROKER_ID_INVALID
    );
    // The same broker (same check code) may apply again after a crash.
    let again = apply_id(&mut state, 1, "h:1");
    assert_eq!(again.reply.code, rc::SUCCESS);
    assert_eq!(
        next(&state),
        2,
        "a repeated application hands out no new id"
    );
    assert_eq!(state.set("b").unwrap().members[&1].address, "h:1");
}

#[test]
fn first_election_takes_the_requester_then_keeps_a_live_master() {
    let live = Alive::default().with(1, 0, 0, 5).with(2, 0, 0, 5);
    let state = three_members(&live);
    let set = state.set("b").unwrap();
    assert_eq!(set.master_id, Some(1));
    assert_eq!((set.master_epoch, set.sync_state_set_epoch), (1, 1));
    assert_eq!(set.sync_state_set, BTreeSet::from([1]));

    let mut state = state;
    let again = elect(&mut state, &live, Some(2), false);
    assert_eq!(again.reply.code, rc::CONTROLLER_MASTER_STILL_EXIST);
    assert!(again.events.is_empty());
    let header = ElectMasterResponseHeader::from_ext(&again.reply.ext).unwrap();
    assert_eq!(header.master_broker_id, Some(1));
    assert_eq!(header.master_address.as_deref(), Some("h:1"));
}

#[test]
fn alter_sync_state_set_checks_in_java_order() {
    let live = Alive::default().with(1, 1, 0, 5).with(2, 1, 0, 5);
    let state = three_members(&live);
    let code = |d: Decision| d.reply.code;
    assert_eq!(
        code(alter(&state, &live, 1, 1, &[1], 1)),
        rc::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
    );
    assert_eq!(
        code(alter(&state, &live, 2, 1, &[1, 2], 1)),
        rc::CONTROLLER_INVALID_MASTER
    );
    assert_eq!(
        code(alter(&state, &live, 1, 0, &[1, 2], 1)),
        rc::CONTROLLER_FENCED_MASTER_EPOCH
    );
    assert_eq!(
        code(alter(&state, &live, 1, 1, &[1, 2], 0)),
        rc::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
    );
    assert_eq!(
        code(alter(&state, &live, 1, 1, &[1, 7], 1)),
        rc::CONTROLLER_INVALID_REPLICAS
    );
    assert_eq!(
        code(alter(&state, &live, 1, 1, &[1, 3], 1)),
        rc::CONTROLLER_BROKER_NOT_ALIVE
    );
    assert_eq!(
        code(alter(&state, &live, 1, 1, &[2], 1)),
        rc::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
    );

    let ahead = Alive::default().with(1, 1, 0, 5).with(2, 4, 0, 5);
    assert_eq!(
        code(alter(&state, &ahead, 1, 1, &[1, 2], 1)),
        rc::CONTROLLER_INVALID_REPLICAS,
        "a joining replica with an epoch no master of the set wrote"
    );

    let ok = alter(&state, &live, 1, 1, &[1, 2], 1);
    assert_eq!(ok.reply.code, rc::SUCCESS);
    let header = AlterSyncStateSetResponseHeader::from_ext(&ok.reply.ext).unwrap();
    assert_eq!(header.new_sync_state_set_epoch, 2);
    let mut state = state;
    commit(&mut state, &ok);
    let set = state.set("b").unwrap();
    assert_eq!((set.sync_state_set.len(), set.sync_state_set_epoch), (2, 2));
}

#[test]
fn a_dead_master_is_replaced_by_the_most_advanced_in_sync_replica() {
    let live = Alive::default()
        .with(1, 1, 0, 5)
        .with(2, 1, 0, 5)
        .with(3, 1, 0, 5);
    let mut state = three_members(&live);
    let altered = alter(&state, &live, 1, 1, &[1, 2, 3], 1);
    commit(&mut state, &altered);
    // Master 1 dies; 3 is further ahead than 2, but 2 has the better priority
    // only among equals.
    let live = Alive::default().with(2, 1, 500, 1).with(3, 1, 900, 9);
    let decision = elect(&mut state, &live, None, false);
    assert_eq!(decision.reply.code, rc::SUCCESS);
    let set = state.set("b").unwrap();
    assert_eq!(set.master_id, Some(3));
    assert_eq!((set.master_epoch, set.sync_state_set_epoch), (2, 3));
    assert_eq!(set.sync_state_set, BTreeSet::from([3]));
    let body: ElectMasterResponseBody =
        serde_json::from_slice(decision.reply.body.as_deref().unwrap()).unwrap();
    assert_eq!(body.broker_member_group.unwrap().broker_addrs.len(), 3);

    // Equal offsets: the lower election priority wins.
    let live = Alive::default().with(1, 2, 10, 7).with(2, 2, 10, 3);
    let mut state = three_members(&Alive::default().with(1, 0, 0, 0).with(2, 0, 0, 0));
    let altered = alter(
        &state,
        &Alive::default().with(1, 0, 0, 0).with(2, 0, 0, 0),
        1,
        1,
        &[1, 2],
        1,
    );
    commit(&mut state, &altered);
    let live_without_1 = Alive(
        live.0
            .iter()
            .filter(|(id, _)| **id != 1)
            .map(|(k, v)| (*k, *v))
            .collect(),
    );
    elect(&mut state, &live_without_1, None, false);
    assert_eq!(state.set("b").unwrap().master_id, Some(2));
}

#[test]
fn replicas_outside_the_sync_state_set_are_never_elected_cleanly() {
    let live = Alive::default().with(1, 1, 0, 5);
    let mut state = three_members(&live);
    // Master 1 dies; 2 is alive but was never in sync.
    let live = Alive::default().with(2, 1, 0, 5);
    let decision = elect(&mut state, &live, None, false);
    assert_eq!(decision.reply.code, rc::CONTROLLER_MASTER_NOT_AVAILABLE);
    let set = state.set("b").unwrap();
    assert_eq!(set.master_id, None, "the dead master is forgotten");
    assert_eq!(set.master_epoch, 2, "and the epoch moves on");
    assert_eq!(
        set.sync_state_set,
        BTreeSet::from([1]),
        "the in-sync set stays"
    );

    // A broker asking for itself gets ELECT_MASTER_FAILED and changes nothing.
    let asked = elect(&mut state, &live, Some(2), false);
    assert_eq!(asked.reply.code, rc::CONTROLLER_ELECT_MASTER_FAILED);
    assert!(asked.events.is_empty());

    // With unclean election allowed, 2 may win.
    let request = ElectMasterRequestHeader {
        broker_name: "b".into(),
        broker_id: Some(-1),
        ..Default::default()
    };
    let unclean = elect_master(&state, &live, &request, true);
    assert_eq!(unclean.reply.code, rc::SUCCESS);
    assert_eq!(
        unclean.events,
        vec![Event::ElectMaster {
            broker_name: "b".into(),
            master_id: Some(2)
        }]
    );

    // The old master returns: it is in the sync-state set, so it wins.
    let live = Alive::default().with(1, 1, 0, 5).with(2, 1, 0, 5);
    assert_eq!(
        elect(&mut state, &live, Some(1), false).reply.code,
        rc::SUCCESS
    );
    let set = state.set("b").unwrap();
    assert_eq!((set.master_id, set.master_epoch), (Some(1), 3));
}

#[test]
fn a_designated_broker_wins_only_when_valid() {
    let live = Alive::default().with(1, 1, 0, 5).with(2, 1, 0, 5);
    let mut state = three_members(&live);
    let altered = alter(&state, &live, 1, 1, &[1, 2], 1);
    commit(&mut state, &altered);
    let refused = elect(&mut state, &live, Some(3), true);
    assert_eq!(refused.reply.code, rc::CONTROLLER_ELECT_MASTER_FAILED);
    let moved = elect(&mut state, &live, Some(2), true);
    assert_eq!(moved.reply.code, rc::SUCCESS);
    assert_eq!(state.set("b").unwrap().master_id, Some(2));
}

#[test]
fn registration_names_only_a_live_master_and_records_a_new_address() {
    let live = Alive::default().with(1, 1, 0, 5);
    let state = three_members(&live);
    let request = |id: i64, addr: &str| RegisterBrokerToControllerRequestHeader {
        cluster_name: "c".into(),
        broker_name: "b".into(),
        broker_id: id,
        broker_address: addr.into(),
        invoke_time: None,
    };
    let with_master = register_broker(&state, &live, &request(2, "h:2"));
    let header =
        RegisterBrokerToControllerResponseHeader::from_ext(&with_master.reply.ext).unwrap();
    assert_eq!(header.master_broker_id, Some(1));
    assert!(with_master.events.is_empty());

    let dead = register_broker(&state, &Alive::default(), &request(2, "h:22"));
    let header = RegisterBrokerToControllerResponseHeader::from_ext(&dead.reply.ext).unwrap();
    assert_eq!(header.master_broker_id, None);
    assert_eq!(dead.events.len(), 1, "the new address is recorded");

    let unknown = register_broker(&state, &live, &request(9, "h:9"));
    assert_eq!(
        unknown.reply.code,
        rc::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
    );
}

#[test]
fn clean_refuses_live_brokers_and_forgets_dead_ones() {
    let live = Alive::default().with(1, 1, 0, 5).with(2, 1, 0, 5);
    let mut state = three_members(&live);
    let request = |ids: Option<&str>, living: bool| CleanControllerBrokerDataRequestHeader {
        cluster_name: Some("c".into()),
        broker_name: "b".into(),
        broker_controller_ids_to_clean: ids.map(str::to_string),
        is_clean_living_broker: living,
        invoke_time: None,
    };
    let code = |d: &Decision| d.reply.code;
    let refused = rc::CONTROLLER_INVALID_CLEAN_BROKER_METADATA;
    assert_eq!(
        code(&clean_broker_data(&state, &live, &request(None, false))),
        refused
    );
    assert_eq!(
        code(&clean_broker_data(
            &state,
            &live,
            &request(Some("2"), false)
        )),
        refused
    );
    assert_eq!(
        code(&clean_broker_data(
            &state,
            &live,
            &request(Some("x"), false)
        )),
        refused
    );
    let ok = clean_broker_data(&state, &live, &request(Some("3"), false));
    assert_eq!(code(&ok), rc::SUCCESS);
    commit(&mut state, &ok);
    assert!(!state.set("b").unwrap().members.contains_key(&3));
    let all = clean_broker_data(&state, &live, &request(None, true));
    commit(&mut state, &all);
    assert!(state.set("b").is_none());
}

#[test]
fn a_set_needs_an_election_when_its_master_died_and_a_member_lives() {
    let live = Alive::default().with(1, 1, 0, 5);
    let state = three_members(&live);
    assert!(sets_needing_election(&state, &live).is_empty());
    assert!(sets_needing_election(&state, &Alive::default()).is_empty());
    let others = Alive::default().with(2, 1, 0, 5);
    assert_eq!(
        sets_needing_election(&state, &others),
        vec!["b".to_string()]
    );
}
