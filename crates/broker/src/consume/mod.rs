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

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use ferrocket_protocol::body::{de_i32, de_string, decode_json, HeartbeatData};
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::{shard_of_conn_id, Connection};
use ferrocket_runtime::shard::{Replica, ShardCall, Versioned};
use ferrocket_store::ConfigDir;
use glommio::sync::Semaphore;
use serde::{Deserialize, Serialize};

use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::error::Reject;
use crate::schedule::{self, DelayLevels, DelayOffsets, ScheduleState};
use crate::services::groups::{GroupChange, GroupTable, SubscriptionGroupConfig};
use crate::services::persist::write_config;
use crate::services::persist::Undo;
use crate::shard::Shard;
use locks::LockTable;

/// A message queue as Java's JSON bodies write it (`MessageQueue`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueKey {
    #[serde(deserialize_with = "de_string")]
    pub topic: String,
    #[serde(deserialize_with = "de_string")]
    pub broker_name: String,
    #[serde(deserialize_with = "de_i32")]
    pub queue_id: i32,
}

impl std::fmt::Display for QueueKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}#{}", self.topic, self.broker_name, self.queue_id)
    }
}

/// What a connection said about itself in its heartbeats.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnInfo {
    pub addr: String,
    pub language: String,
    pub version: i32,
}

/// One queue's figures for GET_CONSUME_STATS (`OffsetWrapper`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueStat {
    pub topic: String,
    pub queue_id: i32,
    pub broker_offset: i64,
    pub consumer_offset: i64,
    pub last_timestamp_ms: i64,
}

/// What is loaded before the shards start.
#[derive(Debug, Clone)]
pub(crate) struct InitialState {
    pub groups: Arc<GroupTable>,
    pub delay_levels: DelayLevels,
    pub delay_offsets: DelayOffsets,
}

/// Reads subscriptionGroup.json and delayOffset.json and parses
/// `messageDelayLevel`; any problem stops the start.
pub(crate) fn load(dir: &ConfigDir, config: &BrokerConfig) -> Result<InitialState, BrokerError> {
    let delay_levels = DelayLevels::parse(&config.message_delay_level)
        .map_err(|reason| BrokerError::Config(format!("messageDelayLevel: {reason}")))?;
    Ok(InitialState {
        groups: Arc::new(crate::services::groups::load_table(dir)?),
        delay_offsets: schedule::load_offsets(dir)?,
        delay_levels,
    })
}

/// Shard 0's writer state of the group table.
struct GroupMaster {
    table: RefCell<GroupTable>,
    version: Cell<u64>,
    /// One change at a time: files and snapshots go out in order.
    write_lock: Semaphore,
}

/// One shard's consumption state (the `consume` field of `Shard`).
pub(crate) struct ConsumeState {
    pub groups: Replica<GroupTable>,
    master: Option<GroupMaster>,
    /// This shard's connections that sent a heartbeat, by connection id.
    pub conns: RefCell<HashMap<u64, ConnInfo>>,
    /// Order locks of the queues this shard owns.
    pub locks: RefCell<LockTable>,
    /// Delay-level progress of the levels this shard owns.
    pub schedule: ScheduleState,
}

impl ConsumeState {
    pub fn new(index: usize, count: usize, initial: &InitialState) -> Self {
        let master = (index == 0).then(|| GroupMaster {
            table: RefCell::new(GroupTable::clone(&initial.groups)),
            version: Cell::new(1),
            write_lock: Semaphore::new(1),
        });
        Self {
            groups: Replica::new(Versioned {
                version: 1,
                value: Arc::clone(&initial.groups),
            }),
            master,
            conns: RefCell::new(HashMap::new()),
            locks: RefCell::new(LockTable::default()),
            schedule: ScheduleState::new(index, count, initial),
        }
    }
}

/// On shard 0: a group change ([`change_groups`]).
pub(crate) struct ChangeGroup(pub GroupChange);

impl ShardCall<Shard> for ChangeGroup {
    type Reply = Result<Option<SubscriptionGroupConfig>, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        change_groups(&shard, self.0).await
    }
}

/// On every shard: a new group table snapshot.
#[derive(Clone)]
struct InstallGroups(Versioned<GroupTable>);

impl ShardCall<Shard> for InstallGroups {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        shard.consume.groups.install(self.0);
    }
}

/// On the shard holding them: what these connections said about themselves.
struct ConnInfos(Vec<u64>);

impl ShardCall<Shard> for ConnInfos {
    type Reply = Vec<(u64, ConnInfo)>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let conns = shard.consume.conns.borrow();
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

/// On shard 0: applies a group change, persists subscriptionGroup.json and
/// sends the new table to every shard (answering once all have it).
async fn change_groups(
    shard: &Rc<Shard>,
    change: GroupChange,
) -> Result<Option<SubscriptionGroupConfig>, Reject> {
    let master = shard
        .consume
        .master
        .as_ref()
        .ok_or_else(|| Reject::system("not the control shard"))?;
    let _permit = master
        .write_lock
        .acquire_permit(1)
        .await
        .map_err(|_| Reject::system("the broker is stopping"))?;
    let (config, changed, undo) = {
        let mut table = master.table.borrow_mut();
        let undo = Undo::record(
            &table.subscription_group_table,
            change.group_name(),
            table.data_version,
        );
        let (config, changed) = crate::services::groups::apply(
            &mut table,
            change,
            crate::clock::now_ms(),
            shard.config().subscription_group_count_max,
        )?;
        (config, changed, undo)
    };
    if changed {
        let snapshot = Arc::new(master.table.borrow().clone());
        if let Err(reject) = write_config(
            &shard.env.config_dir,
            crate::services::groups::GROUPS_FILE,
            Arc::clone(&snapshot),
        )
        .await
        {
            let table = &mut *master.table.borrow_mut();
            undo.restore(&mut table.subscription_group_table, &mut table.data_version);
            return Err(reject);
        }
        let version = master.version.get() + 1;
        master.version.set(version);
        let snapshot = Versioned {
            version,
            value: snapshot,
        };
        for answer in shard.call_all(InstallGroups(snapshot.clone())).await {
            if let Err(reject) = answer {
                tracing::warn!(remark = %reject.remark, "a shard missed a group table update");
            }
        }
    }
    Ok(config)
}

/// HEART_BEAT hook (before the registry sees it): remembers who is on this
/// connection for GET_CONSUMER_CONNECTION_LIST and creates unknown
/// consumer groups. Never fails the heartbeat.
pub(crate) async fn on_heartbeat(
    shard: &Rc<Shard>,
    conn: &Rc<Connection>,
    request: &RemotingCommand,
) {
    shard.consume.conns.borrow_mut().insert(
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
        if let Err(reject) = group_admin::find_or_create(shard, &consumer.group_name).await {
            tracing::debug!(group = %consumer.group_name, remark = %reject.remark,
                "heartbeat of a group that cannot be created");
        }
    }
}

/// A connection closed.
pub(crate) fn connection_closed(shard: &Shard, conn_id: u64) {
    shard.consume.conns.borrow_mut().remove(&conn_id);
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
