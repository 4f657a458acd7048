//! The per-core context: one shard's state, reached by every request
//! handler and background task on its executor (`Rc`, `RefCell`, no
//! locks). Feature state and logic live in `services`; the operations
//! that cross shards are `impl Shard` blocks in this module's children
//! (`tables`, `topics`, `groups`, `clients`) and typed calls
//! ([`Shard::call`]). The shard's fields are private, grouped by concern
//! in `state` (tables, owned queues, lifecycle, access rules, counters,
//! connections) and reached through its methods.

pub(crate) mod access;
pub(crate) mod append;
pub(crate) mod clients;
pub(crate) mod compaction;
pub(crate) mod consume_stats;
pub(crate) mod delivery;
pub(crate) mod groups;
pub(crate) mod metrics;
pub(crate) mod pop;
pub(crate) mod pull;
pub(crate) mod push;
pub(crate) mod replication;
pub(crate) mod role;
pub(crate) mod routes;
pub(crate) mod settings;
mod state;
pub(crate) mod stats;
pub(crate) mod tables;
pub(crate) mod topics;
pub(crate) mod transactions;

use std::cell::{Cell, OnceCell, RefCell};
use std::net::SocketAddr;
use std::rc::{Rc, Weak};
use std::sync::Arc;

use ferrocket_protocol::body::TopicConfig;
use ferrocket_protocol::message_id::UniqueKeyGenerator;
use ferrocket_runtime::server::Connection;
use ferrocket_runtime::shard::{owner_shard, CallMesh, Replica, ShardCall, Versioned};
use ferrocket_runtime::sync::StopSignal;
use ferrocket_runtime::task_set::TaskSet;
use ferrocket_store::{ConfigDir, ShardStore, StoreHandle};

use crate::clock::now_ms;
use crate::config::BrokerConfig;
use crate::error::Reject;
use crate::services::clients::ClientTable;
use crate::services::control::ControlPlane;
use crate::services::delay_levels::{DelayLevels, DelayOffsets};
use crate::services::groups::GroupTable;
use crate::services::locks::LockTable;
use crate::services::long_poll::LongPolls;
use crate::services::offsets::{OffsetMap, OffsetTable};
use crate::services::placed::PlacedServices;
use crate::services::request_modes::RequestModeTable;
use crate::services::schedule::ScheduleState;
use crate::services::topics::TopicTable;

/// What is loaded before the shards start.
#[derive(Debug, Clone)]
pub(crate) struct LoadedState {
    pub groups: Arc<GroupTable>,
    pub request_modes: Arc<RequestModeTable>,
    pub delay_levels: DelayLevels,
    pub delay_offsets: DelayOffsets,
}

/// What every shard shares, fixed at start. `Send + Sync`.
pub(crate) struct BrokerEnv {
    pub config: BrokerConfig,
    /// The runner's live handles, given beside the config.
    pub handles: crate::BrokerHandles,
    /// Where every shard listens (the port is resolved when 0 was asked).
    pub listen: SocketAddr,
    /// The store host written into records and message ids.
    pub store_host: SocketAddr,
    /// `ip:port` announced to name servers.
    pub broker_addr: String,
    pub store: StoreHandle,
    pub config_dir: ConfigDir,
    pub boot_ms: i64,
    pub initial_topics: Versioned<TopicTable>,
    pub initial_offsets: Arc<OffsetMap>,
    pub namesrvs: Vec<SocketAddr>,
    /// A message this close to the CommitLog's end counts as in memory
    /// (`accessMessageInMemoryMaxRatio` of physical memory).
    pub in_memory_bytes: i64,
    /// Subscription groups and delay-level state loaded at start.
    pub loaded: LoadedState,
    /// ACL 1.0 accounts, with `aclEnable=true`.
    pub acl: Option<Arc<ferrocket_acl::AclStore>>,
    /// ACL 2.0's users and ACLs (kept whether or not the checks are on:
    /// the admin requests manage them either way).
    pub auth: Arc<ferrocket_acl::auth::AuthStore>,
    /// TLS on the port (`tls.server.mode`); `None`: disabled.
    pub tls: Option<Arc<ferrocket_tls::ServerTls>>,
    /// TLS towards the name servers (`useTLS`); `None`: plaintext.
    pub namesrv_tls: Option<Arc<ferrocket_tls::rustls::ClientConfig>>,
    /// Slave acting master: the set's lowest id and whether this acts.
    pub acting: crate::services::acting_master::ActingMaster,
    /// Lite subscriptions a proxy keeps here (LITE_SUBSCRIPTION_CTL).
    pub lite: crate::services::lite::registry::LiteRegistry,
    /// Controller mode's live handles, shared with the supervisor.
    pub role: crate::role::state::RoleState,
}

pub(crate) type ShardMesh = CallMesh<Shard>;

/// Per-shard counters for GET_BROKER_RUNTIME_INFO.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ShardStats {
    pub put_messages: u64,
    pub put_bytes: u64,
    pub got_messages: u64,
    pub held_pulls: u64,
    /// Stored messages the broker could not copy to their REAL_TOPIC /
    /// REAL_QID (or whose timer was invalid), skipped.
    pub skipped_redeliveries: u64,
}

/// A shard's copy of the settings in force, at a version of shard 0's.
struct LiveConfig {
    version: u64,
    changed_ms: i64,
    config: Rc<BrokerConfig>,
}

/// One shard. Its state is private and grouped by concern (`state`);
/// handlers reach it through methods.
pub(crate) struct Shard {
    index: usize,
    count: usize,
    env: Arc<BrokerEnv>,
    /// The settings in force; see [`Shard::config`].
    config: RefCell<LiveConfig>,
    store: ShardStore,
    mesh: OnceCell<Rc<ShardMesh>>,
    tables: state::Tables,
    queues: state::Queues,
    lifecycle: state::Lifecycle,
    security: state::Security,
    counters: state::Counters,
    connections: state::Connections,
    /// Timer, index and transaction services this shard runs (`system`).
    services: PlacedServices,
    uniq: RefCell<UniqueKeyGenerator>,
    rng: Cell<u64>,
}

impl Shard {
    pub fn new(index: usize, count: usize, env: Arc<BrokerEnv>, store: ShardStore) -> Rc<Self> {
        let offsets = OffsetTable::from_file(&env.initial_offsets, |topic, queue_id| {
            owner_shard(topic, queue_id, count) == index
        });
        let groups = Versioned {
            version: 1,
            value: Arc::clone(&env.loaded.groups),
        };
        let clients = Versioned {
            version: 0,
            value: Arc::new(ClientTable::default()),
        };
        let request_modes = Versioned {
            version: 1,
            value: Arc::clone(&env.loaded.request_modes),
        };
        let control = (index == 0).then(|| {
            let tables = (env.initial_topics.clone(), clients.clone(), groups.clone());
            let credentials = env.config.inner_credentials.clone();
            let namesrv =
                crate::services::namesrv::NamesrvClient::new(credentials, env.namesrv_tls.clone());
            ControlPlane::new(
                tables.0,
                tables.1,
                tables.2,
                request_modes.clone(),
                namesrv,
                env.config.clone(),
            )
        });
        let seed = (now_ms() as u64) ^ ((index as u64 + 1) << 48) ^ u64::from(std::process::id());
        let uniq = UniqueKeyGenerator::new(
            env.store_host.ip(),
            std::process::id(),
            seed as i32 ^ index as i32,
        );
        let shard = Rc::new(Self {
            index,
            count,
            tables: state::Tables {
                topics: Replica::new(env.initial_topics.clone()),
                clients: Replica::new(clients),
                groups: Replica::new(groups),
                request_modes: Replica::new(request_modes),
            },
            queues: state::Queues {
                offsets: RefCell::new(offsets),
                locks: RefCell::new(LockTable::default()),
                polls: LongPolls::new(env.config.long_poll_waiters_max),
                schedule: ScheduleState::new(
                    index,
                    count,
                    &env.loaded.delay_levels,
                    &env.loaded.delay_offsets,
                ),
                pop: pop::PopStore::default(),
                compaction: Default::default(),
            },
            lifecycle: state::Lifecycle {
                stopping: StopSignal::new(),
                tasks: TaskSet::new(),
                role: Default::default(),
                control,
            },
            security: Default::default(),
            counters: Default::default(),
            connections: Default::default(),
            services: PlacedServices::default(),
            uniq: RefCell::new(uniq),
            rng: Cell::new(seed | 1),
            mesh: OnceCell::new(),
            config: RefCell::new(LiveConfig {
                version: 0,
                changed_ms: env.boot_ms,
                config: Rc::new(env.config.clone()),
            }),
            store,
            env,
        });
        Self::connect_store(&shard);
        shard
    }

    /// What the store calls back into the shard for: each dispatched entry
    /// (long polls, services), the topics' retention rules and the queues
    /// compaction pins.
    fn connect_store(shard: &Rc<Self>) {
        let weak = Rc::downgrade(shard);
        shard.store.set_dispatch_listener(move |entry| {
            if let Some(shard) = weak.upgrade() {
                shard
                    .polls()
                    .notify(&entry.topic, entry.queue_id, entry.tags_code);
                shard.services.on_dispatch(entry);
            }
        });
        let weak = Rc::downgrade(shard);
        shard.store.set_topic_retention_source(move || {
            weak.upgrade().map_or_else(Vec::new, |shard| {
                shard.topics().with(|table| {
                    crate::services::topic_attributes::retention_rules(
                        table.topic_config_table.values(),
                    )
                })
            })
        });
        let weak = Rc::downgrade(shard);
        shard.store.set_queue_pin_source(move || {
            weak.upgrade()
                .map_or_else(Vec::new, |shard| shard.compaction_pins())
        });
    }

    pub fn set_mesh(&self, mesh: Rc<ShardMesh>) {
        if self.mesh.set(mesh).is_err() {
            tracing::error!(shard = self.index, "mesh connected twice");
        }
    }

    pub fn mesh(&self) -> Option<Rc<ShardMesh>> {
        self.mesh.get().cloned()
    }

    /// The settings in force: the start-up config with every online
    /// update (UPDATE_BROKER_CONFIG) applied. A shard-local `Rc`: cloning
    /// it writes no shared cache line.
    pub fn config(&self) -> Rc<BrokerConfig> {
        self.config.borrow().config.clone()
    }

    /// The version of the settings in force (0: as started) and when they
    /// changed (GET_BROKER_CONFIG's `version`).
    pub fn config_version(&self) -> (u64, i64) {
        let live = self.config.borrow();
        (live.version, live.changed_ms)
    }

    /// Installs settings of `version` if newer than the held ones.
    pub fn install_config(&self, version: u64, changed_ms: i64, config: &BrokerConfig) {
        let mut live = self.config.borrow_mut();
        if version > live.version {
            *live = LiveConfig {
                version,
                changed_ms,
                config: Rc::new(config.clone()),
            };
        }
    }

    /// The topic's current configuration (this shard's copy).
    pub fn topic(&self, name: &str) -> Option<TopicConfig> {
        self.with_topic(name, TopicConfig::clone)
    }

    /// Reads a topic's config in place (no clone: the send path asks on
    /// every message).
    pub fn with_topic<R>(&self, name: &str, read: impl FnOnce(&TopicConfig) -> R) -> Option<R> {
        self.topics()
            .with(|table| table.topic_config_table.get(name).map(read))
    }

    pub fn owner_of(&self, topic: &str, queue_id: i32) -> usize {
        owner_shard(topic, queue_id, self.count)
    }

    /// Queue state lives on the queue's owner: a call about a queue that
    /// reached another shard is a routing bug.
    pub fn assert_owns(&self, topic: &str, queue_id: i32) {
        assert_eq!(
            self.owner_of(topic, queue_id),
            self.index,
            "{topic}#{queue_id} handled on a shard that does not own it"
        );
    }

    /// Runs `call` on shard `target` (here when it is this shard).
    pub async fn call<C: ShardCall<Shard>>(
        &self,
        target: usize,
        call: C,
    ) -> Result<C::Reply, Reject> {
        let mesh = self
            .mesh()
            .ok_or_else(|| Reject::system("the shard is not connected yet"))?;
        Ok(mesh.call(target, call).await?)
    }

    /// Runs a copy of `call` on every shard at once; replies in shard order.
    pub async fn call_all<C: ShardCall<Shard> + Clone>(
        &self,
        call: C,
    ) -> Vec<Result<C::Reply, Reject>> {
        let Some(mesh) = self.mesh() else {
            return Vec::new();
        };
        mesh.call_all(call)
            .await
            .into_iter()
            .map(|reply| reply.map_err(Reject::from))
            .collect()
    }

    /// Open connections of this shard.
    pub fn connection_count(&self) -> usize {
        self.connections.open.borrow().len()
    }

    pub fn connection_opened(&self, conn: &Rc<Connection>) {
        self.connections
            .open
            .borrow_mut()
            .insert(conn.id(), Rc::downgrade(conn));
    }

    /// An open connection of this shard.
    pub fn connection(&self, conn_id: u64) -> Option<Rc<Connection>> {
        self.connections
            .open
            .borrow()
            .get(&conn_id)
            .and_then(Weak::upgrade)
    }

    pub fn connection_closed(&self, conn_id: u64) {
        self.connections.open.borrow_mut().remove(&conn_id);
    }

    /// A new UNIQ_KEY for a message sent without one, at the time the
    /// caller read for the send.
    pub fn next_unique_key(&self, now_ms: i64) -> String {
        self.uniq.borrow_mut().next_key(now_ms)
    }

    /// A pseudo-random value in `0..bound` (xorshift; queue selection only).
    pub fn random_below(&self, bound: i32) -> i32 {
        assert!(bound > 0, "random_below needs a positive bound");
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        (x % bound as u64) as i32
    }

    pub fn count_put(&self, messages: u64, bytes: u64) {
        let mut stats = self.stats().get();
        stats.put_messages += messages;
        stats.put_bytes += bytes;
        self.stats().set(stats);
    }

    pub fn count_skipped_redelivery(&self) {
        let mut stats = self.stats().get();
        stats.skipped_redeliveries += 1;
        self.stats().set(stats);
    }

    pub fn count_got(&self, messages: u64) {
        let mut stats = self.stats().get();
        stats.got_messages += messages;
        self.stats().set(stats);
    }
}
