//! The control-plane writer, on shard 0: the master topic table and client
//! registry, their snapshots sent to every shard, topics.json and
//! consumerOffset.json, client expiry, and the shutdown rendezvous.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use ferrocket_protocol::body::{HeartbeatData, TopicConfig};
use futures_lite::future;
use glommio::sync::Semaphore;

use ferrocket_runtime::server::shard_of_conn_id;
use ferrocket_runtime::shard::{ShardCall, Versioned};

use crate::clock::now_ms;
use crate::error::Reject;
use crate::namesrv::NamesrvClient;
use crate::services::clients::ClientTable;
use crate::services::offsets::{merge, OffsetFile, OffsetMap, OFFSETS_FILE};
use crate::services::persist::write_config;
use crate::services::persist::Undo;
use crate::shard::Shard;
use crate::topics::{self, TopicChange, TopicTable, TOPICS_FILE};
use ferrocket_runtime::sync::Notify;

/// How often silent clients are looked for (`ClientHousekeepingService`).
pub const CLIENT_SCAN_INTERVAL_MS: u64 = 10_000;
/// How long shard 0 waits at shutdown for the other shards' offsets.
pub const SHUTDOWN_GATHER_TIMEOUT_MS: u64 = 10_000;

/// Shard 0's writer state.
pub(crate) struct Control {
    topics: RefCell<TopicTable>,
    topics_version: Cell<u64>,
    clients: RefCell<ClientTable>,
    clients_version: Cell<u64>,
    /// One change at a time: persistence and snapshots go out in order.
    write_lock: Semaphore,
    /// Wakes the name server registration loop (topics changed).
    pub register_now: Notify,
    stopped: RefCell<BTreeMap<usize, OffsetMap>>,
    stopped_notify: Notify,
    /// Connections to the name servers.
    pub namesrv: NamesrvClient,
}

impl Control {
    pub fn new(initial: &Versioned<TopicTable>) -> Self {
        Self {
            topics: RefCell::new(TopicTable::clone(&initial.value)),
            topics_version: Cell::new(initial.version),
            clients: RefCell::new(ClientTable::default()),
            clients_version: Cell::new(0),
            write_lock: Semaphore::new(1),
            register_now: Notify::default(),
            stopped: RefCell::new(BTreeMap::new()),
            stopped_notify: Notify::default(),
            namesrv: NamesrvClient::new(),
        }
    }

    /// The master topic table (for registration).
    pub fn topics(&self) -> TopicTable {
        self.topics.borrow().clone()
    }
}

fn control(shard: &Shard) -> Result<&Control, Reject> {
    shard
        .control
        .as_ref()
        .ok_or_else(|| Reject::system("not the control shard"))
}

/// On shard 0: a topic change ([`topic_change`]).
pub(crate) struct ChangeTopic(pub TopicChange);

impl ShardCall<Shard> for ChangeTopic {
    type Reply = Result<Option<TopicConfig>, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        topic_change(&shard, self.0).await
    }
}

/// On shard 0: a client's heartbeat enters the registry.
pub(crate) struct Heartbeat {
    pub conn_id: u64,
    pub data: HeartbeatData,
}

impl ShardCall<Shard> for Heartbeat {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        heartbeat(&shard, self.conn_id, self.data).await
    }
}

/// On shard 0: a client leaves the registry (UNREGISTER_CLIENT).
pub(crate) struct Unregister {
    pub client_id: String,
    pub producer_group: Option<String>,
    pub consumer_group: Option<String>,
}

impl ShardCall<Shard> for Unregister {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let producer = self.producer_group.as_deref();
        let consumer = self.consumer_group.as_deref();
        change_clients(&shard, |table| {
            table.unregister(&self.client_id, producer, consumer)
        })
        .await
    }
}

/// On shard 0: the clients of a closed connection leave the registry.
pub(crate) struct ConnectionClosed {
    pub conn_id: u64,
}

impl ShardCall<Shard> for ConnectionClosed {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        change_clients(&shard, |table| table.connection_closed(self.conn_id)).await
    }
}

/// On shard 0, at shutdown: another shard's final offsets.
pub(crate) struct ShardStopped {
    pub shard: usize,
    pub offsets: OffsetMap,
}

impl ShardCall<Shard> for ShardStopped {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let control = control(&shard)?;
        control
            .stopped
            .borrow_mut()
            .insert(self.shard, self.offsets);
        control.stopped_notify.notify();
        Ok(())
    }
}

/// On every shard: a new topic table snapshot.
#[derive(Clone)]
struct InstallTopics(Versioned<TopicTable>);

impl ShardCall<Shard> for InstallTopics {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        shard.topics.install(self.0);
    }
}

/// On every shard: a new client registry snapshot.
#[derive(Clone)]
struct InstallClients(Versioned<ClientTable>);

impl ShardCall<Shard> for InstallClients {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        shard.clients.install(self.0);
    }
}

/// On every shard: its offsets and whether they changed since last asked.
#[derive(Clone)]
struct SnapshotOffsets;

impl ShardCall<Shard> for SnapshotOffsets {
    type Reply = (OffsetMap, bool);

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard.offsets.borrow_mut().snapshot()
    }
}

/// On the shard holding these connections: tell them `group` changed.
struct NotifyConsumerIdsChanged {
    group: String,
    conn_ids: Vec<u64>,
}

impl ShardCall<Shard> for NotifyConsumerIdsChanged {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        shard.notify_consumers(&self.group, &self.conn_ids);
    }
}

/// Applies a topic change, persists topics.json, sends the new table to every
/// shard (answering only once all have it) and triggers a registration.
pub(crate) async fn topic_change(
    shard: &Rc<Shard>,
    change: TopicChange,
) -> Result<Option<TopicConfig>, Reject> {
    let control = control(shard)?;
    let _permit = control
        .write_lock
        .acquire_permit(1)
        .await
        .map_err(|_| Reject::system("the broker is stopping"))?;
    let (topic, changed, undo) = {
        let mut table = control.topics.borrow_mut();
        let undo = Undo::record(
            &table.topic_config_table,
            change.topic_name(),
            table.data_version,
        );
        let (topic, changed) = topics::apply(&mut table, change, shard.config(), now_ms())?;
        (topic, changed, undo)
    };
    if changed {
        let snapshot = Arc::new(control.topics.borrow().clone());
        if let Err(reject) =
            write_config(&shard.env.config_dir, TOPICS_FILE, Arc::clone(&snapshot)).await
        {
            let table = &mut *control.topics.borrow_mut();
            undo.restore(&mut table.topic_config_table, &mut table.data_version);
            return Err(reject);
        }
        let version = control.topics_version.get() + 1;
        control.topics_version.set(version);
        let snapshot = Versioned {
            version,
            value: snapshot,
        };
        for answer in shard.call_all(InstallTopics(snapshot.clone())).await {
            if let Err(reject) = answer {
                tracing::warn!(remark = %reject.remark, "a shard missed a topic table update");
            }
        }
        control.register_now.notify();
    }
    Ok(topic)
}

async fn heartbeat(shard: &Rc<Shard>, conn_id: u64, data: HeartbeatData) -> Result<(), Reject> {
    let config = shard.config();
    control(shard)?
        .clients
        .borrow()
        .check_room(
            &data,
            config.subscription_group_count_max,
            config.clients_per_group_max,
        )
        .map_err(Reject::system)?;
    for group in ClientTable::clustering_groups(&data) {
        // A retry topic only for a group that exists (the receiving shard
        // created it when allowed), as Java's heartBeat does.
        let exists = shard.consume.groups.with(|t| t.get(group).is_some());
        if exists
            && !control(shard)?
                .topics
                .borrow()
                .topic_config_table
                .contains_key(&topics::retry_topic(group))
        {
            topic_change(
                shard,
                TopicChange::EnsureRetry {
                    group: group.to_string(),
                },
            )
            .await?;
        }
    }
    let now = now_ms();
    change_clients(shard, |table| table.heartbeat(conn_id, &data, now)).await
}

/// Applies `change` to the client registry; when it changed something,
/// sends the new snapshot to every shard.
async fn change_clients(
    shard: &Rc<Shard>,
    change: impl FnOnce(&mut ClientTable) -> bool,
) -> Result<(), Reject> {
    let control = control(shard)?;
    let before = control.clients.borrow().group_signatures();
    let changed = change(&mut control.clients.borrow_mut());
    if !changed {
        return Ok(());
    }
    let after = control.clients.borrow().group_signatures();
    let version = control.clients_version.get() + 1;
    control.clients_version.set(version);
    let snapshot = Versioned {
        version,
        value: Arc::new(control.clients.borrow().clone()),
    };
    for answer in shard.call_all(InstallClients(snapshot.clone())).await {
        if let Err(reject) = answer {
            tracing::warn!(remark = %reject.remark, "a shard missed a client registry update");
        }
    }
    let changed_groups = after
        .iter()
        .filter(|(group, signature)| before.get(*group) != Some(signature))
        .map(|(group, _)| group.clone());
    for group in changed_groups {
        notify_group(shard, &snapshot.value, group);
    }
    Ok(())
}

/// Sends NOTIFY_CONSUMER_IDS_CHANGED to every member of `group`, through
/// the shards holding their connections (`notifyConsumerIdsChanged`), so
/// they rebalance now rather than at their next periodic rebalance.
fn notify_group(shard: &Rc<Shard>, table: &ClientTable, group: String) {
    let Some(mesh) = shard.mesh() else {
        return;
    };
    let mut by_shard: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for conn_id in table.group_connections(&group) {
        by_shard
            .entry(usize::from(shard_of_conn_id(conn_id)))
            .or_default()
            .push(conn_id);
    }
    for (target, conn_ids) in by_shard {
        if target >= shard.count {
            continue;
        }
        let mesh = mesh.clone();
        let notify = NotifyConsumerIdsChanged {
            group: group.clone(),
            conn_ids,
        };
        glommio::spawn_local(async move {
            if let Err(err) = mesh.call(target, notify).await {
                tracing::debug!(target, %err, "consumer change notification not delivered");
            }
        })
        .detach();
    }
}

/// Drops clients that stopped sending heartbeats; runs until the shard stops.
pub(crate) async fn client_expiry_loop(shard: Rc<Shard>) {
    let interval = Duration::from_millis(CLIENT_SCAN_INTERVAL_MS);
    loop {
        if shard.stopping.interrupts_sleep(interval).await {
            return;
        }
        let expiry = shard.config().client_expiry_ms;
        let now = now_ms();
        if let Err(reject) = change_clients(&shard, |table| table.expire(now, expiry)).await {
            tracing::warn!(remark = %reject.remark, "client expiry failed");
        }
    }
}

/// Gathers every shard's offsets and writes consumerOffset.json when any
/// changed; runs until the shard stops.
pub(crate) async fn offset_persist_loop(shard: Rc<Shard>) {
    let interval = Duration::from_millis(shard.config().offset_persist_interval_ms);
    let mut unsaved = false;
    loop {
        if shard.stopping.interrupts_sleep(interval).await {
            return;
        }
        let mut parts = Vec::with_capacity(shard.count);
        let mut changed = false;
        let mut complete = true;
        for answer in shard.call_all(SnapshotOffsets).await {
            match answer {
                Ok((map, c)) => {
                    changed |= c;
                    parts.push(map);
                }
                Err(_) => complete = false,
            }
        }
        // A partial view would drop the missing shards' offsets from the
        // file; the shards cleared their changed flags, so remember to write
        // next round. A failed write is retried the same way.
        unsaved |= changed;
        if unsaved && complete {
            let file = OffsetFile {
                offset_table: merge(parts),
            };
            unsaved = write_config(&shard.env.config_dir, OFFSETS_FILE, Arc::new(file))
                .await
                .is_err();
        }
    }
}

/// At shutdown, on shard 0: waits (bounded) for every other shard's final
/// offsets, then writes consumerOffset.json and topics.json.
pub(crate) async fn final_persist(shard: &Rc<Shard>, own: OffsetMap) {
    let Ok(control) = control(shard) else {
        return;
    };
    control.stopped.borrow_mut().insert(shard.index, own);
    let all_in = async {
        while control.stopped.borrow().len() < shard.count {
            control.stopped_notify.wait().await;
        }
        true
    };
    let timeout = async {
        glommio::timer::sleep(Duration::from_millis(SHUTDOWN_GATHER_TIMEOUT_MS)).await;
        false
    };
    if !future::or(all_in, timeout).await {
        tracing::warn!(
            reported = control.stopped.borrow().len(),
            shards = shard.count,
            "not every shard reported its offsets at shutdown; keeping the last file"
        );
        // Logged inside; nothing is left to answer at shutdown.
        let _ = write_config(
            &shard.env.config_dir,
            TOPICS_FILE,
            Arc::new(control.topics()),
        )
        .await;
        return;
    }
    let parts: Vec<OffsetMap> = std::mem::take(&mut *control.stopped.borrow_mut())
        .into_values()
        .collect();
    let file = OffsetFile {
        offset_table: merge(parts),
    };
    let _ = write_config(&shard.env.config_dir, OFFSETS_FILE, Arc::new(file)).await;
    let _ = write_config(
        &shard.env.config_dir,
        TOPICS_FILE,
        Arc::new(control.topics()),
    )
    .await;
}
