//! Routes through a failover (issue 37), with real processes on 127.0.0.1:
//! one controller, a name server, two brokers of one set in controller mode
//! (`tests/harness/failover.rs`).
//!
//! - A killed master: while the slave turns master, the set never drops out
//!   of the topic's route (a run stopping for a role change stays
//!   registered; the next one registers at once).
//! - A paused master comes back after another was elected (the "zombie
//!   master"): it must never take the route back.
//!
//! The master is stopped (SIGSTOP) past the controller's heartbeat
//! timeout, the slave is elected and routed, then the old master resumes
//! (SIGCONT). Its registrations as brokerId 0 carry the old epoch as
//! `stateVersion` and are ignored, so for the whole time it takes to notice
//! and turn slave, every route names the live master; then it turns slave
//! in place (no restart), follows the master the controller names and
//! rejoins the in-sync set.

mod harness;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use ferrocket_protocol::codes::response_code;
use harness::failover::*;
use harness::{unique_name, wait_for, Namesrv};

const WAIT: Duration = Duration::from_secs(60);
/// How long routes are watched after the old master resumes: past its
/// role check, its data plane's restart and its first registrations.
const WATCH: Duration = Duration::from_secs(12);
const HEARTBEAT_TIMEOUT: &str = "controllerHeartBeatTimeoutMills=4000";

fn wait_state(addrs: &str, what: &str, ok: impl Fn(&SetState) -> bool) -> SetState {
    wait_for(WAIT, || sync_state(addrs).filter(|s| ok(s)))
        .unwrap_or_else(|| panic!("{what}: the set stayed {:?}", sync_state(addrs)))
}

#[test]
fn a_killed_master_never_takes_the_set_out_of_the_route() {
    let dir = tempfile::tempdir().unwrap();
    let controllers = controllers(dir.path(), 1);
    let addrs = controller_addr(&controllers);
    let namesrv = Namesrv::start();
    let mut first = controller_broker_with(&namesrv, &addrs, &[HEARTBEAT_TIMEOUT]);
    let second = controller_broker_with(&namesrv, &addrs, &[HEARTBEAT_TIMEOUT]);
    wait_state(&addrs, "the slave joins", |s| {
        s.master == Some(1) && s.in_sync == BTreeSet::from([1, 2])
    });
    let topic = unique_name("Kill");
    let code = send(&mut first.connect(), &topic, 0, "before".into(), true);
    assert_eq!(code, response_code::SUCCESS, "the first send");
    let both = wait_for(WAIT, || {
        (routed_set(&namesrv.addr(), &topic)?.len() == 2).then_some(())
    });
    assert!(both.is_some(), "both brokers are never routed");

    first.process.kill();
    let new_master = second.addr();
    let until = Instant::now() + WAIT;
    let mut missing = 0;
    loop {
        match routed_set(&namesrv.addr(), &topic) {
            None => missing += 1,
            Some(set) if set.get(&0) == Some(&new_master) => break,
            Some(_) => {}
        }
        assert!(Instant::now() < until, "the elected master is never routed");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        missing, 0,
        "route reads without the set while it changed roles"
    );
    let code = send(&mut second.connect(), &topic, 1, "after".into(), true);
    assert_eq!(code, response_code::SUCCESS, "a send to the elected master");
}

#[test]
fn a_resumed_old_master_never_takes_the_route_from_the_elected_one() {
    let dir = tempfile::tempdir().unwrap();
    let controllers = controllers(dir.path(), 1);
    let addrs = controller_addr(&controllers);
    let namesrv = Namesrv::start();
    // The old master registers often, so it does so at once on waking;
    // the elected one at Java's 30 s, so the route is not repaired soon.
    let often = "registerNameServerPeriod=300";
    let mut first = controller_broker_with(&namesrv, &addrs, &[HEARTBEAT_TIMEOUT, often]);
    let second = controller_broker_with(&namesrv, &addrs, &[HEARTBEAT_TIMEOUT]);
    wait_state(&addrs, "the slave joins", |s| {
        s.master == Some(1) && s.in_sync == BTreeSet::from([1, 2])
    });
    let topic = unique_name("Zombie");
    let mut conn = first.connect();
    let code = send(&mut conn, &topic, 0, "before".into(), true);
    assert_eq!(code, response_code::SUCCESS, "the first send");
    let routed = wait_for(WAIT, || {
        (routed_master(&namesrv.addr(), &topic)? == first.addr()).then_some(())
    });
    assert!(routed.is_some(), "the first master is never routed");

    first.process.signal(libc::SIGSTOP);
    let state = wait_state(&addrs, "the slave is elected", |s| s.master == Some(2));
    let new_master = second.addr();
    assert_eq!(state.master_address.as_deref(), Some(new_master.as_str()));
    let routed = wait_for(WAIT, || {
        (routed_master(&namesrv.addr(), &topic)? == new_master).then_some(())
    });
    assert!(routed.is_some(), "the elected master is never routed");

    first.process.signal(libc::SIGCONT);
    let until = Instant::now() + WATCH;
    let mut wrong = Vec::new();
    while Instant::now() < until {
        let seen = routed_master(&namesrv.addr(), &topic);
        if seen.as_deref() != Some(new_master.as_str()) {
            wrong.push(seen);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        wrong.is_empty(),
        "{} of the route reads named no master or another (first: {:?}) instead of the elected master {new_master}",
        wrong.len(),
        &wrong[..wrong.len().min(5)]
    );
    let state = sync_state(&addrs).expect("the controller answers");
    assert_eq!(state.master, Some(2), "the elected master stays");
    // The old master follows the elected one (the HA address it gave) and
    // is admitted once it copies from it.
    wait_state(&addrs, "the old master rejoins as a replica", |s| {
        s.master == Some(2) && s.in_sync == BTreeSet::from([1, 2])
    });
    assert_turned_slave_in_place(&first.process.output());
    let mut conn = second.connect();
    let code = send(&mut conn, &topic, 1, "after".into(), true);
    assert_eq!(code, response_code::SUCCESS, "a send to the elected master");
    let bodies = bodies(&second, &topic);
    assert!(
        bodies.contains("before") && bodies.contains("after"),
        "{bodies:?}"
    );
}

/// The old master turned slave in place (Java's `changeToSlave`): its log
/// agreed with the elected master's, so its data plane kept running and
/// read no log again after the change.
fn assert_turned_slave_in_place(output: &str) {
    let lines: Vec<&str> = output.lines().collect();
    let changed = lines
        .iter()
        .rposition(|l| l.contains("the role changed in place") && l.contains("SLAVE"))
        .unwrap_or_else(|| panic!("the old master did not turn slave in place:\n{output}"));
    assert!(
        !lines[changed..]
            .iter()
            .any(|l| l.contains("CommitLog recovered") || l.contains("restarting in the new role")),
        "the old master restarted after turning slave:\n{output}"
    );
}
