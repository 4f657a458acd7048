//! Controller mode's role change in place (Java's `ReplicasManager` and
//! `AutoSwitchHAService` `changeToMaster` / `changeToSlave`): the shards,
//! the store, its open segments and the listeners keep running; only what
//! the role decides changes. A slave becomes master: its HA link and
//! metadata sync stop, the appender answers every chunk sent before, the
//! CommitLog takes appends, the new epoch is recorded at its end, the
//! settings say master (sends are taken, registrations say brokerId 0 and
//! the epoch), and the master's HA listener and its own loops (delay
//! levels, timers, transaction checks, pop revive) start. A slave follows
//! another master: its HA link and metadata sync start again towards it.
//! A master turns slave (`demote`). A master elected again at a new epoch
//! restarts (the supervisor, `role::supervisor`, does it), as does a broker whose log must be
//! cut back first.

use std::rc::Rc;
use std::time::Duration;

use ferrocket_runtime::shard::ShardCall;

use crate::role::switch::RoleOrder;
use crate::shard::Shard;

/// How often shard 0 looks for an order.
const ORDER_POLL_MS: u64 = 10;
/// Longest the appender may take to answer what shard 0 sent it.
const ANSWER_TIMEOUT_MS: u64 = 10_000;

/// Shard 0 in controller mode: carries out the supervisor's role orders.
pub(crate) async fn switch_loop(shard: Rc<Shard>) {
    let switch = shard.env().role.switch.clone();
    let poll = Duration::from_millis(ORDER_POLL_MS);
    while !shard.stopping().interrupts_sleep(poll).await {
        let Some((seq, order)) = switch.take() else {
            continue;
        };
        let outcome = change_role(&shard, &order).await;
        match &outcome {
            Ok(()) => tracing::info!(
                role = order.role.name(),
                broker_id = order.broker_id,
                state_version = order.state_version,
                "the role changed in place"
            ),
            Err(why) => tracing::warn!(%why, "the role could not change in place"),
        }
        if let Ok(control) = shard.control() {
            super::progress::publish_now(&shard, &control.ha);
        }
        switch.finish(seq, outcome);
    }
}

async fn change_role(shard: &Rc<Shard>, order: &RoleOrder) -> Result<(), String> {
    if !shard.config().replication.broker_role.is_slave() {
        if !order.role.is_slave() {
            return Err("a master takes a new epoch by a restart".into());
        }
        return demote(shard, order).await;
    }
    let control = shard.control().map_err(|r| r.remark)?;
    shard.role().stop_all().await?;
    // A chunk of the old master's sent before the HA link ended lands first.
    all_answered(shard).await?;
    if order.role.is_slave() {
        let mut master = control.ha.master.borrow_mut();
        master.broker_addr = Some(order.master_addr.clone());
        master.ha_addr = Some(order.master_ha_addr.clone());
    } else {
        // The tier publishes under the new epoch from its first pass as master.
        if let (Some(tier), Some(epoch)) = (shard.env().store.tier(), order.master_epoch) {
            tier.set_master_epoch(epoch);
        }
        // Nothing of the old master's reaches the appender any more.
        shard.env().store.set_replica(false);
        let mut epoch = (*shard.config()).clone();
        epoch.controller_mode.master_epoch = order.master_epoch;
        crate::services::master_epoch::record(&epoch, shard.env().store.written_offset())
            .map_err(|e| e.to_string())?;
    }
    shard.install_role(order).await?;
    crate::tasks::start_replication(shard, true).map_err(|e| e.to_string())?;
    if !order.role.is_slave() {
        if !shard.config().dispatch_gated() {
            super::gate::open_all(shard).await;
        }
        for reply in shard.call_all(StartMasterLoops).await {
            reply.map_err(|r| r.remark)?;
        }
    }
    control.register_now.notify();
    Ok(())
}

/// A master turns slave (Java's `changeToSlave`): sends are refused first
/// (the settings say slave), then every shard's master loops end (HA
/// listener and links, delay levels, timers, transaction checks, pop
/// revive), the CommitLog takes only the master's bytes, and the HA link
/// to the new master starts. Whether the log must be cut back is the
/// supervisor's to check once this answers (it restarts the run then).
async fn demote(shard: &Rc<Shard>, order: &RoleOrder) -> Result<(), String> {
    let control = shard.control().map_err(|r| r.remark)?;
    let gated = shard.config().dispatch_gated();
    shard.install_role(order).await?;
    for reply in shard.call_all(StopRoleLoops).await {
        reply.map_err(|r| r.remark)??;
    }
    all_answered(shard).await?;
    shard.env().store.set_replica(true);
    {
        let mut master = control.ha.master.borrow_mut();
        master.broker_addr = Some(order.master_addr.clone());
        master.ha_addr = Some(order.master_ha_addr.clone());
    }
    control.ha.master_confirm.set(None);
    crate::tasks::start_replication(shard, gated).map_err(|e| e.to_string())?;
    control.register_now.notify();
    Ok(())
}

/// Waits until the appender answered everything this shard sent it.
async fn all_answered(shard: &Shard) -> Result<(), String> {
    let until = std::time::Instant::now() + Duration::from_millis(ANSWER_TIMEOUT_MS);
    while shard.store().unanswered() > 0 {
        if std::time::Instant::now() >= until {
            return Err("the appender did not answer in time".into());
        }
        glommio::timer::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}

/// On every shard of a master turning slave: ends the role's loops.
#[derive(Clone)]
struct StopRoleLoops;

impl ShardCall<Shard> for StopRoleLoops {
    type Reply = Result<(), String>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard.role().stop_all().await
    }
}

/// On every shard of a new master: the loops only a master runs.
#[derive(Clone)]
struct StartMasterLoops;

impl ShardCall<Shard> for StartMasterLoops {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        crate::tasks::schedule::reload(&shard);
        crate::tasks::schedule::spawn(&shard);
        crate::tasks::placed::start_master_loops(&shard);
        let revive = crate::tasks::pop_revive::revive_loop(shard.clone());
        shard
            .tasks()
            .spawn("pop revive", shard.role().scoped(revive));
    }
}
