//! Background drivers: the loops each shard runs beside its connections,
//! all started into the shard's [`TaskSet`](ferrocket_runtime::task_set::TaskSet)
//! and stopped through it, bounded, in one place.

pub(crate) mod acl_reload;
pub(crate) mod acting_escape;
pub(crate) mod acting_hand_back;
pub(crate) mod acting_master;
pub(crate) mod compaction;
pub(crate) mod control_plane;
pub(crate) mod ha;
pub(crate) mod index_feed;
pub(crate) mod metrics_http;
pub(crate) mod metrics_push;
pub(crate) mod namesrv_register;
pub(crate) mod placed;
pub(crate) mod pop_revive;
pub(crate) mod schedule;
pub(crate) mod timer;
pub(crate) mod transactions;

use std::rc::Rc;
use std::time::Duration;

use crate::error::BrokerError;
use crate::shard::Shard;

/// Longest a stopping shard waits for its background loops.
pub const TASKS_STOP_TIMEOUT_MS: u64 = 15_000;

/// Once the shard's mesh is connected: opens the services placed on this
/// shard and starts their loops.
pub(crate) fn start(shard: &Rc<Shard>) -> Result<(), BrokerError> {
    placed::start(shard)?;
    shard
        .open_pop_log()
        .map_err(|reason| BrokerError::Service {
            service: "pop state",
            reason,
        })?;
    let compaction = compaction::compaction_loop(shard.clone());
    shard.tasks().spawn("compaction", compaction);
    if shard.index() == 0 {
        start_replication(shard, false)?;
        if shard.config().controller_mode.enabled {
            shard
                .tasks()
                .spawn("role changes", ha::role::switch_loop(shard.clone()));
            shard
                .tasks()
                .spawn("HA progress", ha::progress::publish_loop(shard.clone()));
        }
        if shard.config().metrics.enabled() {
            let listener = metrics_http::bind(shard)?;
            shard.tasks().spawn(
                "metrics endpoint",
                metrics_http::accept_loop(shard.clone(), listener),
            );
        }
        if let Some(pusher) = metrics_push::start(shard)? {
            let push = metrics_push::push_loop(shard.clone(), pusher);
            shard.tasks().spawn("metrics export", push);
        }
    }
    Ok(())
}

/// Shard 0 runs the HA links: a master's listener (bound here, so a busy
/// port fails the start), or a slave's link to its master and its
/// metadata sync. `resume`: after a role change in place (the dispatch
/// gate stays where it is until moved).
pub(crate) fn start_replication(shard: &Rc<Shard>, resume: bool) -> Result<(), BrokerError> {
    let tasks = &shard.tasks();
    let role = &shard.role();
    if shard.config().dispatch_gated() {
        let gate = ha::gate::gate_loop(shard.clone(), resume);
        tasks.spawn("confirm offset", role.scoped(gate));
    }
    if shard.config().replication.broker_role.is_slave() {
        let link = ha::slave::client_loop(shard.clone());
        tasks.spawn("HA link to the master", role.scoped(link));
        let sync = ha::metadata::sync_loop(shard.clone());
        tasks.spawn("metadata sync", role.scoped(sync));
        return Ok(());
    }
    let listener = ha::master::bind(shard)?;
    let weak = Rc::downgrade(shard);
    shard.store().set_written_listener(move || {
        if let Some(control) = weak.upgrade().as_ref().and_then(|s| s.control_plane()) {
            control.ha.written.notify_all();
        }
    });
    let accept = ha::master::accept_loop(shard.clone(), listener);
    tasks.spawn("HA listener", role.scoped(accept));
    Ok(())
}

/// Once the shard listens: the control-plane loops (shard 0) and the
/// delay-level scheduler.
pub(crate) fn start_serving(shard: &Rc<Shard>) {
    if shard.index() == 0 {
        let tasks = &shard.tasks();
        tasks.spawn(
            "name server registration",
            namesrv_register::registration_loop(shard.clone()),
        );
        tasks.spawn(
            "consumerOffset.json",
            control_plane::offset_persist_loop(shard.clone()),
        );
        tasks.spawn(
            "client expiry",
            control_plane::client_expiry_loop(shard.clone()),
        );
        tasks.spawn("ACL reload", acl_reload::reload_loop(shard.clone()));
        if shard.env().acting.enabled() {
            let poll = acting_master::member_group_loop(shard.clone());
            tasks.spawn("broker member group", poll);
        }
        if shard.config().replication.enable_slave_acting_master {
            let beat = acting_master::heartbeat_loop(shard.clone());
            tasks.spawn("name server heartbeat", beat);
        }
        if shard.env().acting.awaiting_hand_back() {
            let reclaim = acting_hand_back::reclaim(shard.clone());
            tasks.spawn("hand-back from acting slaves", reclaim);
        }
        tasks.spawn(
            "throughput sampling",
            crate::shard::stats::throughput_sample_loop(shard.clone()),
        );
    }
    schedule::spawn(shard);
    shard.tasks().spawn(
        "broker stats sampling",
        crate::shard::stats::broker_stats_sample_loop(shard.clone()),
    );
    if !shard.config().replication.broker_role.is_slave() {
        let revive = pop_revive::revive_loop(shard.clone());
        shard
            .tasks()
            .spawn("pop revive", shard.role().scoped(revive));
    }
}

/// At shutdown: ends every loop (bounded by [`TASKS_STOP_TIMEOUT_MS`]), then
/// makes what must survive durable, in order: delay-level progress,
/// consumer offsets (gathered on shard 0, which also unregisters from the
/// name servers), and the placed services' state. The store stops after.
pub(crate) async fn stop(shard: &Rc<Shard>) {
    shard.stopping().trigger();
    shard.polls().close();
    let late = shard
        .tasks()
        .join(Duration::from_millis(TASKS_STOP_TIMEOUT_MS))
        .await;
    if !late.is_empty() {
        tracing::warn!(
            shard = shard.index(),
            ?late,
            "background tasks did not stop in time"
        );
    }
    schedule::stop(shard).await;
    control_plane::hand_over_offsets(shard).await;
    placed::stop(shard).await;
}
