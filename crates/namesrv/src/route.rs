//! The route table (RocketMQ `RouteInfoManager`): which brokers exist, in
//! which cluster, which queues each serves for each topic, and when each was
//! last heard from. Pure data: callers pass the current time, so liveness
//! is testable without sleeping.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use ferrocket_protocol::body::{
    perm, BrokerData, ClusterInfo, DataVersion, QueueData, TopicConfig,
    TopicConfigSerializeWrapper, TopicList, TopicRouteData,
};

/// Broker id of a master (`MixAll.MASTER_ID`).
pub const MASTER_ID: i64 = 0;

/// A broker process: its cluster and address (`BrokerAddrInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BrokerAddrKey {
    pub cluster: String,
    pub addr: String,
}

/// Liveness of one broker process (`BrokerLiveInfo`).
#[derive(Debug, Clone)]
struct BrokerLive {
    last_update: Instant,
    timeout: Duration,
    data_version: DataVersion,
    /// The connection it registered over, if any (closing it unregisters).
    conn_id: Option<u64>,
    ha_server_addr: Option<String>,
}

/// One REGISTER_BROKER request, decoded.
#[derive(Debug, Clone, Default)]
pub struct Registration {
    pub cluster: String,
    pub broker_addr: String,
    pub broker_name: String,
    pub broker_id: i64,
    pub ha_server_addr: Option<String>,
    /// The broker's own expiry (`heartbeatTimeoutMillis`), if it sent one.
    pub timeout: Option<Duration>,
    pub topics: TopicConfigSerializeWrapper,
    pub filter_servers: Vec<String>,
    pub conn_id: Option<u64>,
    /// `enableActingMaster`; `None` from a broker older than 5.0.
    pub enable_acting_master: Option<bool>,
}

/// What a registration answers (`RegisterBrokerResult`): for a slave, its
/// master's address and HA address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisterOutcome {
    pub ha_server_addr: Option<String>,
    pub master_addr: Option<String>,
}

/// A registration that cannot be accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// A single-topic registration from a broker id not registered yet.
    #[error("register broker failed: broker {broker_name}[{broker_id}] at {broker_addr} has not registered in full yet")]
    NotRegisteredYet {
        broker_name: String,
        broker_id: i64,
        broker_addr: String,
    },
}

/// How a registration's broker id was taken.
enum Claim {
    /// Taken; `first` when the broker (or this id of it) is new.
    Taken { first: bool },
    /// A newer broker process holds the id at another address.
    Conflict,
}

/// Whether the process registered at `old_addr` has a newer state version
/// than the registration.
fn newer_broker_at(
    live: &HashMap<BrokerAddrKey, BrokerLive>,
    reg: &Registration,
    old_addr: &str,
) -> bool {
    let old_key = BrokerAddrKey {
        cluster: reg.cluster.clone(),
        addr: old_addr.to_string(),
    };
    let old_state = live.get(&old_key).map(|l| l.data_version.state_version);
    old_state.is_some_and(|old| old > reg.topics.data_version.state_version)
}

/// The name server's routing state.
#[derive(Debug, Default)]
pub struct RouteTable {
    /// topic -> broker name -> queues.
    topic_queues: BTreeMap<String, BTreeMap<String, QueueData>>,
    /// broker name -> addresses by broker id.
    brokers: BTreeMap<String, BrokerData>,
    /// cluster -> broker names.
    clusters: BTreeMap<String, BTreeSet<String>>,
    live: HashMap<BrokerAddrKey, BrokerLive>,
    filter_servers: HashMap<BrokerAddrKey, Vec<String>>,
    /// Expiry for brokers that do not send their own.
    default_timeout: Duration,
    /// Drop a broker's topics that are missing from its registration
    /// (`deleteTopicWithBrokerRegistration`, off by default as in RocketMQ).
    delete_missing_topics: bool,
    /// Slave-acting-master settings and the notices waiting to be sent
    /// (`acting`).
    acting: acting::ActingSettings,
    notices: Vec<acting::MinBrokerNotice>,
}

impl RouteTable {
    pub fn new(default_timeout: Duration, delete_missing_topics: bool) -> Self {
        Self {
            default_timeout,
            delete_missing_topics,
            ..Self::default()
        }
    }

    /// `supportActingMaster` and `notifyMinBrokerIdChanged`.
    pub fn with_acting(mut self, acting: ActingSettings) -> Self {
        self.acting = acting;
        self
    }

    /// `deleteTopicWithBrokerRegistration` changed while running.
    pub fn set_delete_missing_topics(&mut self, delete: bool) {
        self.delete_missing_topics = delete;
    }

    /// Registers (or refreshes) a broker and its topic table.
    pub fn register_broker(
        &mut self,
        reg: Registration,
        now: Instant,
    ) -> Result<RegisterOutcome, RegisterError> {
        let key = BrokerAddrKey {
            cluster: reg.cluster.clone(),
            addr: reg.broker_addr.clone(),
        };
        self.clusters
            .entry(reg.cluster.clone())
            .or_default()
            .insert(reg.broker_name.clone());
        let prev_min = self.min_broker_id(&reg.broker_name);
        let first = match self.claim_broker_id(&reg, &key)? {
            Claim::Taken { first } => first,
            Claim::Conflict => return Ok(RegisterOutcome::default()),
        };
        let prime_slave = self.mark_acting(&reg);
        if reg.broker_id == MASTER_ID || prime_slave {
            self.apply_topics(&reg, &key, first);
        }
        self.refresh_live(&reg, key, now);
        if reg.broker_id < prev_min.unwrap_or(MASTER_ID) {
            self.notice_lower_id(&reg);
        }
        Ok(self.slave_outcome(&reg))
    }

    /// Records the registration's address under its broker id in the
    /// broker's entry (made if new).
    fn claim_broker_id(
        &mut self,
        reg: &Registration,
        key: &BrokerAddrKey,
    ) -> Result<Claim, RegisterError> {
        let mut first = false;
        let broker = self
            .brokers
            .entry(reg.broker_name.clone())
            .or_insert_with(|| {
                first = true;
                BrokerData {
                    cluster: reg.cluster.clone(),
                    broker_name: reg.broker_name.clone(),
                    ..BrokerData::default()
                }
            });
        // One address holds one id: a slave promoted to master drops its
        // old id entry.
        broker
            .broker_addrs
            .retain(|id, addr| *addr != reg.broker_addr || *id == reg.broker_id);

        if let Some(old_addr) = broker.broker_addrs.get(&reg.broker_id) {
            if *old_addr != reg.broker_addr && newer_broker_at(&self.live, reg, old_addr) {
                tracing::warn!(
                    broker = %reg.broker_name, id = reg.broker_id, old = %old_addr,
                    new = %reg.broker_addr, "registration conflicts with a newer broker; ignored"
                );
                self.live.remove(key);
                return Ok(Claim::Conflict);
            }
        }
        if !broker.broker_addrs.contains_key(&reg.broker_id)
            && reg.topics.topic_config_table.len() == 1
        {
            return Err(RegisterError::NotRegisteredYet {
                broker_name: reg.broker_name.clone(),
                broker_id: reg.broker_id,
                broker_addr: reg.broker_addr.clone(),
            });
        }
        let old = broker
            .broker_addrs
            .insert(reg.broker_id, reg.broker_addr.clone());
        Ok(Claim::Taken {
            first: first || old.as_deref().is_none_or(str::is_empty),
        })
    }

    /// Marks the broker process live now, with its filter servers.
    fn refresh_live(&mut self, reg: &Registration, key: BrokerAddrKey, now: Instant) {
        let timeout = reg.timeout.unwrap_or(self.default_timeout);
        let previous = self.live.insert(
            key.clone(),
            BrokerLive {
                last_update: now,
                timeout,
                data_version: reg.topics.data_version,
                conn_id: reg.conn_id,
                ha_server_addr: reg.ha_server_addr.clone(),
            },
        );
        if previous.is_none() {
            tracing::info!(cluster = %key.cluster, addr = %key.addr, broker = %reg.broker_name, "new broker registered");
        }
        if reg.filter_servers.is_empty() {
            self.filter_servers.remove(&key);
        } else {
            self.filter_servers.insert(key, reg.filter_servers.clone());
        }
    }

    /// For a slave: its live master's address and HA address.
    fn slave_outcome(&self, reg: &Registration) -> RegisterOutcome {
        let mut outcome = RegisterOutcome::default();
        if reg.broker_id == MASTER_ID {
            return outcome;
        }
        let master = self
            .brokers
            .get(&reg.broker_name)
            .and_then(|b| b.master_addr())
            .map(str::to_string);
        if let Some(master_addr) = master {
            let master_key = BrokerAddrKey {
                cluster: reg.cluster.clone(),
                addr: master_addr.clone(),
            };
            if let Some(master_live) = self.live.get(&master_key) {
                outcome.ha_server_addr = master_live.ha_server_addr.clone();
                outcome.master_addr = Some(master_addr);
            }
        }
        outcome
    }

    fn apply_topics(&mut self, reg: &Registration, key: &BrokerAddrKey, first: bool) {
        let table = &reg.topics.topic_config_table;
        if self.delete_missing_topics {
            let stale: Vec<String> = self
                .topic_queues
                .iter()
                .filter(|(topic, queues)| {
                    queues.contains_key(&reg.broker_name) && !table.contains_key(*topic)
                })
                .map(|(topic, _)| topic.clone())
                .collect();
            for topic in stale {
                self.remove_broker_from_topic(&topic, &reg.broker_name);
            }
        }
        let version_changed = self.is_data_version_changed(key, &reg.topics.data_version);
        for config in table.values() {
            let missing = self
                .topic_queues
                .get(&config.topic_name)
                .is_none_or(|queues| !queues.contains_key(&reg.broker_name));
            if first || version_changed || missing {
                self.put_queue_data(&reg.broker_name, config, reg.broker_id != MASTER_ID);
            }
        }
    }

    /// `prime_slave`: registered by the slave with the lowest id of a set
    /// with no master; an acting-master set routes it read-only.
    fn put_queue_data(&mut self, broker_name: &str, config: &TopicConfig, prime_slave: bool) {
        let acting = self
            .brokers
            .get(broker_name)
            .is_some_and(|b| b.enable_acting_master);
        let queue_data = QueueData {
            broker_name: broker_name.to_string(),
            read_queue_nums: config.read_queue_nums,
            write_queue_nums: config.write_queue_nums,
            perm: match prime_slave && acting {
                true => config.perm & !perm::WRITE,
                false => config.perm,
            },
            topic_sys_flag: config.topic_sys_flag,
        };
        self.topic_queues
            .entry(config.topic_name.clone())
            .or_default()
            .insert(broker_name.to_string(), queue_data);
    }

    fn remove_broker_from_topic(&mut self, topic: &str, broker_name: &str) {
        if let Some(queues) = self.topic_queues.get_mut(topic) {
            queues.remove(broker_name);
            if queues.is_empty() {
                self.topic_queues.remove(topic);
            }
        }
    }

    /// True when the broker is unknown or its topic table version differs.
    pub fn is_data_version_changed(&self, key: &BrokerAddrKey, version: &DataVersion) -> bool {
        self.live
            .get(key)
            .is_none_or(|live| live.data_version != *version)
    }

    /// The topic table version last registered by this broker.
    pub fn data_version(&self, key: &BrokerAddrKey) -> Option<DataVersion> {
        self.live.get(key).map(|live| live.data_version)
    }

    /// Marks the broker alive now (BROKER_HEARTBEAT, QUERY_DATA_VERSION).
    pub fn touch(&mut self, key: &BrokerAddrKey, now: Instant) -> bool {
        match self.live.get_mut(key) {
            Some(live) => {
                live.last_update = now;
                true
            }
            None => false,
        }
    }

    /// Removes one broker process (UNREGISTER_BROKER), and with it the
    /// broker name, cluster and topics left with no broker.
    pub fn unregister_broker(&mut self, key: &BrokerAddrKey, broker_name: &str) {
        let was_live = self.live.remove(key).is_some();
        self.filter_servers.remove(key);
        let mut name_removed = false;
        let was_min = self.is_min_broker(broker_name, &key.addr);
        if let Some(broker) = self.brokers.get_mut(broker_name) {
            broker.broker_addrs.retain(|_, addr| *addr != key.addr);
            if broker.broker_addrs.is_empty() {
                self.brokers.remove(broker_name);
                name_removed = true;
            }
        }
        if !name_removed {
            self.on_member_gone(broker_name, &key.addr, was_min);
        }
        if name_removed {
            if let Some(names) = self.clusters.get_mut(&key.cluster) {
                names.remove(broker_name);
                if names.is_empty() {
                    self.clusters.remove(&key.cluster);
                }
            }
            self.topic_queues.retain(|_, queues| {
                queues.remove(broker_name);
                !queues.is_empty()
            });
        }
        tracing::info!(cluster = %key.cluster, addr = %key.addr, broker = broker_name, was_live, name_removed, "broker unregistered");
    }

    /// The broker name registered at this cluster and address, if any.
    fn broker_name_of(&self, key: &BrokerAddrKey) -> Option<String> {
        self.brokers
            .values()
            .find(|b| b.cluster == key.cluster && b.broker_addrs.values().any(|a| *a == key.addr))
            .map(|b| b.broker_name.clone())
    }

    /// Unregisters a broker process found by cluster and address (a closed
    /// connection or an expiry). Returns whether it was known.
    pub fn remove_broker_process(&mut self, key: &BrokerAddrKey) -> bool {
        match self.broker_name_of(key) {
            Some(name) => {
                self.unregister_broker(key, &name);
                true
            }
            None => self.live.remove(key).is_some(),
        }
    }

    /// Removes brokers silent for longer than their timeout; returns them.
    pub fn expire(&mut self, now: Instant) -> Vec<BrokerAddrKey> {
        let expired: Vec<BrokerAddrKey> = self
            .live
            .iter()
            .filter(|(_, live)| now.saturating_duration_since(live.last_update) > live.timeout)
            .map(|(key, _)| key.clone())
            .collect();
        for key in &expired {
            tracing::warn!(cluster = %key.cluster, addr = %key.addr, "broker expired");
            self.remove_broker_process(key);
        }
        expired
    }

    /// Brokers that registered over this connection.
    pub fn brokers_of_conn(&self, conn_id: u64) -> Vec<BrokerAddrKey> {
        self.live
            .iter()
            .filter(|(_, live)| live.conn_id == Some(conn_id))
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// A topic's route (`pickupTopicRouteData`): `None` when no queue of
    /// it is on a known broker.
    pub fn topic_route(&self, topic: &str) -> Option<TopicRouteData> {
        let queues = self.topic_queues.get(topic)?;
        let mut route = TopicRouteData {
            queue_datas: queues.values().cloned().collect(),
            ..TopicRouteData::default()
        };
        for broker_name in queues.keys() {
            let Some(broker) = self.brokers.get(broker_name) else {
                continue;
            };
            for addr in broker.broker_addrs.values() {
                let key = BrokerAddrKey {
                    cluster: broker.cluster.clone(),
                    addr: addr.clone(),
                };
                if let Some(servers) = self.filter_servers.get(&key) {
                    route
                        .filter_server_table
                        .insert(addr.clone(), servers.clone());
                }
            }
            route.broker_datas.push(broker.clone());
        }
        if route.broker_datas.is_empty() {
            return None;
        }
        self.route_acting_masters(topic, &mut route);
        Some(route)
    }

    pub fn cluster_info(&self) -> ClusterInfo {
        ClusterInfo {
            broker_addr_table: self.brokers.clone(),
            cluster_addr_table: self.clusters.clone(),
        }
    }

    pub fn all_topics(&self) -> TopicList {
        TopicList {
            topic_list: self.topic_queues.keys().cloned().collect(),
            broker_addr: None,
        }
    }

    /// Topics with queues on any broker of `cluster`.
    pub fn topics_by_cluster(&self, cluster: &str) -> TopicList {
        let names = self.clusters.get(cluster);
        let topic_list = self
            .topic_queues
            .iter()
            .filter(|(_, queues)| names.is_some_and(|n| queues.keys().any(|b| n.contains(b))))
            .map(|(topic, _)| topic.clone())
            .collect();
        TopicList {
            topic_list,
            broker_addr: None,
        }
    }

    /// Cluster and broker names (they double as system topics), with one
    /// broker address (`getSystemTopicList`).
    pub fn system_topics(&self) -> TopicList {
        let mut topic_list = BTreeSet::new();
        for (cluster, names) in &self.clusters {
            topic_list.insert(cluster.clone());
            topic_list.extend(names.iter().cloned());
        }
        let broker_addr = self
            .brokers
            .values()
            .find_map(|b| b.broker_addrs.values().next().cloned());
        TopicList {
            topic_list,
            broker_addr,
        }
    }

    /// Deletes a topic's route, everywhere or only on `cluster`'s brokers.
    pub fn delete_topic(&mut self, topic: &str, cluster: Option<&str>) {
        match cluster {
            None => {
                self.topic_queues.remove(topic);
            }
            Some(cluster) => {
                let Some(names) = self.clusters.get(cluster) else {
                    return;
                };
                if let Some(queues) = self.topic_queues.get_mut(topic) {
                    queues.retain(|broker_name, _| !names.contains(broker_name));
                    if queues.is_empty() {
                        self.topic_queues.remove(topic);
                    }
                }
            }
        }
    }

    /// Adds queue datas to a topic (REGISTER_TOPIC_IN_NAMESRV); ignored when
    /// any names an unknown broker.
    pub fn register_topic(&mut self, topic: &str, queue_datas: Vec<QueueData>) -> bool {
        if queue_datas.is_empty()
            || queue_datas
                .iter()
                .any(|q| !self.brokers.contains_key(&q.broker_name))
        {
            return false;
        }
        let queues = self.topic_queues.entry(topic.to_string()).or_default();
        for queue_data in queue_datas {
            queues.insert(queue_data.broker_name.clone(), queue_data);
        }
        true
    }

    /// Takes write permission away from (`wipe`) or gives read-write back to
    /// every topic of a broker; returns how many topics changed.
    pub fn set_write_perm(&mut self, broker_name: &str, wipe: bool) -> usize {
        let mut count = 0;
        for queues in self.topic_queues.values_mut() {
            if let Some(queue_data) = queues.get_mut(broker_name) {
                queue_data.perm = if wipe {
                    queue_data.perm & !perm::WRITE
                } else {
                    perm::READ_WRITE
                };
                count += 1;
            }
        }
        count
    }
}

#[path = "route_acting.rs"]
mod acting;
pub use acting::{ActingSettings, MinBrokerNotice};

#[cfg(test)]
#[path = "route_tests.rs"]
mod tests;
