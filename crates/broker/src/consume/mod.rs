//! Consumption beyond plain pulls: subscription groups
//! ([`groups`], [`group_admin`]), consumer connections and consume stats
//! ([`admin`]), retry and dead-letter queues ([`retry`]), order locks
//! ([`locks`]) and SQL92 pull filters ([`sql_filter`]). The delay-level
//! scheduler is its sibling module `crate::schedule`.
//!
//! Runs on every shard's executor. Shard 0 is the single writer of the
//! group table (a [`Replica`] copy on every shard, like topics); order
//! locks and queue statistics live on each queue's owner shard; the
//! connection details GET_CONSUMER_CONNECTION_LIST reports live on the
//! shard holding the connection. Each cross-shard call is a typed
//! `ShardCall` next to the code that sends it.

pub(crate) mod admin;
pub(crate) mod group_admin;
pub(crate) mod locks;
pub(crate) mod reset;
pub(crate) mod retry;

use std::collections::BTreeMap;
use std::rc::Rc;

use ferrocket_protocol::body::{decode_json, HeartbeatData};
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::{shard_of_conn_id, Connection};
use ferrocket_runtime::shard::ShardCall;

use crate::error::Reject;
use crate::schedule;
use crate::services::clients::ConnInfo;
use crate::shard::Shard;

/// One queue's figures for GET_CONSUME_STATS (`OffsetWrapper`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueStat {
    pub topic: String,
    pub queue_id: i32,
    pub broker_offset: i64,
    pub consumer_offset: i64,
    pub last_timestamp_ms: i64,
}

/// On the shard holding them: what these connections said about themselves.
struct ConnInfos(Vec<u64>);

impl ShardCall<Shard> for ConnInfos {
    type Reply = Vec<(u64, ConnInfo)>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let conns = shard.conn_infos.borrow();
        self.0
            .into_iter()
            .filter_map(|id| conns.get(&id).map(|info| (id, info.clone())))
            .collect()
    }
}

/// What the connections of `conn_ids` said about themselves, from the
/// shards holding them.
pub(crate) async fn conn_infos(
    shard: &Shard,
    conn_ids: &[u64],
) -> Result<BTreeMap<u64, ConnInfo>, Reject> {
    let mut by_shard: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for &conn_id in conn_ids {
        by_shard
            .entry(usize::from(shard_of_conn_id(conn_id)))
            .or_default()
            .push(conn_id);
    }
    let mut known = BTreeMap::new();
    for (target, ids) in by_shard {
        if target < shard.count {
            known.extend(shard.call(target, ConnInfos(ids)).await?);
        }
    }
    Ok(known)
}

/// HEART_BEAT hook (before the registry sees it): remembers who is on this
/// connection for GET_CONSUMER_CONNECTION_LIST and creates unknown
/// consumer groups. Never fails the heartbeat.
pub(crate) async fn on_heartbeat(
    shard: &Rc<Shard>,
    conn: &Rc<Connection>,
    request: &RemotingCommand,
) {
    shard.conn_infos.borrow_mut().insert(
        conn.id(),
        ConnInfo {
            addr: conn.peer_addr().to_string(),
            language: request.language.name().to_string(),
            version: request.version,
        },
    );
    let Ok(data) = decode_json::<HeartbeatData>(&request.body) else {
        return;
    };
    for consumer in &data.consumer_data_set {
        if consumer.group_name.is_empty() {
            continue;
        }
        if let Err(reject) = shard.find_or_create_group(&consumer.group_name).await {
            tracing::debug!(group = %consumer.group_name, remark = %reject.remark,
                "heartbeat of a group that cannot be created");
        }
    }
}

/// A connection closed.
pub(crate) fn connection_closed(shard: &Shard, conn_id: u64) {
    shard.conn_infos.borrow_mut().remove(&conn_id);
}

/// Starts this shard's background work (the delay-level scheduler of the
/// levels it owns; on shard 0 also delayOffset.json persistence).
pub(crate) fn spawn(shard: &Rc<Shard>) {
    schedule::spawn(shard);
}

/// At shutdown, before the store stops: ends the scheduler and makes its
/// progress durable.
pub(crate) async fn stop(shard: &Rc<Shard>) {
    schedule::stop(shard).await;
}

/// Messages of a group the broker refuses, checked on every pull:
/// the group must exist (or be creatable) and allow consumption.
pub(crate) async fn check_pull(shard: &Rc<Shard>, group: &str) -> Result<(), Reject> {
    group_admin::check_pull(shard, group).await
}
