//! Services that each live on one designated shard, and what other shards
//! ask them over the mesh.
//!
//! - **Timer shard** = owner of (`rmq_sys_wheel_timer`, 0). It owns the
//!   timer store (fed from that queue's ConsumeQueue, in CommitLog order)
//!   and delivers due timer messages. It also owns the message index: one
//!   sequential scanner reads every CommitLog record once, in order, and
//!   feeds the IndexService (which must be fed in CommitLog order, so by
//!   one thread), and the timer checks the index for timers that may have
//!   been delivered just before a crash.
//! - **Transaction shard** = owner of (`RMQ_SYS_TRANS_HALF_TOPIC`, 0). It
//!   owns the half messages' state, applies END_TRANSACTION (forwarded
//!   there, so one shard decides each half message exactly once) and runs
//!   the check-back loop.
//!
//! With one shard both are shard 0. Requests for a queue's offsets by time
//! run on the queue's owner, as every queue request does.

use std::rc::Rc;

use crate::error::BrokerError;
use crate::services::index::IndexFeed;
use crate::services::timer::TimerService;
use crate::services::transaction::TxnService;
use crate::shard::Shard;

/// Opens the services this shard owns and starts their loops. Called once
/// the shard's mesh is connected.
pub(crate) fn start(shard: &Rc<Shard>) -> Result<(), BrokerError> {
    let services = &shard.services();
    if shard.index() == crate::services::topics::timer_shard(shard.count()) {
        let root = &shard.config().store_path_root_dir;
        let index = IndexFeed::open(root, shard.store()).map_err(service("message index"))?;
        let index = Rc::new(index);
        let timer =
            TimerService::open(&shard.config(), shard.store()).map_err(service("timer store"))?;
        let timer = Rc::new(timer);
        let _ = services.index.set(Rc::clone(&index));
        let _ = services.timer.set(Rc::clone(&timer));
        let feed = crate::tasks::index_feed::feed_loop(shard.clone(), index);
        shard.tasks().spawn("message index", feed);
        // A slave stores nothing of its own: its master delivers timers,
        // or, while it acts as master, another set takes them.
        if !is_slave(shard) || escapes(shard) {
            let run = crate::tasks::timer::run(shard.clone(), timer);
            shard.tasks().spawn("timer", shard.role().scoped(run));
        }
    }
    if shard.index() == crate::services::topics::txn_shard(shard.count()) {
        let txn =
            TxnService::open(&shard.env().config_dir).map_err(service("transaction state"))?;
        let txn = Rc::new(txn);
        let _ = services.txn.set(Rc::clone(&txn));
        if !is_slave(shard) {
            let check = crate::tasks::transactions::run(shard.clone(), txn);
            shard
                .tasks()
                .spawn("transactions", shard.role().scoped(check));
        } else if escapes(shard) {
            let escape = crate::tasks::transactions::acting::run(shard.clone(), txn);
            let scoped = shard.role().scoped(escape);
            shard.tasks().spawn("acting-master transactions", scoped);
        }
    }
    Ok(())
}

/// A slave that became master in place: the loops `start` leaves to a
/// master (timer delivery, transaction checks) on the shards that own them.
pub(crate) fn start_master_loops(shard: &Rc<Shard>) {
    if let Some(timer) = shard.services().timer.get() {
        let run = crate::tasks::timer::run(shard.clone(), Rc::clone(timer));
        shard.tasks().spawn("timer", shard.role().scoped(run));
    }
    if let Some(txn) = shard.services().txn.get() {
        let check = crate::tasks::transactions::run(shard.clone(), Rc::clone(txn));
        shard
            .tasks()
            .spawn("transactions", shard.role().scoped(check));
    }
}

/// A slave with `enableSlaveActingMaster` and `enableRemoteEscape`: while
/// it acts, its timers and open transactions go to another set.
fn escapes(shard: &Shard) -> bool {
    shard.env().acting.enabled() && shard.config().replication.enable_remote_escape
}

fn is_slave(shard: &Shard) -> bool {
    shard.config().replication.broker_role.is_slave()
}

/// Makes the services' state durable once their loops ended. Call before
/// the store shuts down.
pub(crate) async fn stop(shard: &Rc<Shard>) {
    if let Some(timer) = shard.services().timer.get() {
        timer.flush().await;
    }
    if let Some(index) = shard.services().index.get() {
        index.flush().await;
    }
    if let Some(txn) = shard.services().txn.get() {
        txn.persist(&shard.env().config_dir).await;
    }
}

/// Names the service a failed open was about.
fn service(name: &'static str) -> impl FnOnce(String) -> BrokerError {
    move |reason| BrokerError::Service {
        service: name,
        reason,
    }
}
