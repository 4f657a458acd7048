//! Registering with name servers, from shard 0: REGISTER_BROKER with the
//! topic table at start, every `registerBrokerIntervalMs` and after topic
//! changes; UNREGISTER_BROKER at shutdown.

use ferrocket_protocol::body::{encode_compressed, perm, RegisterBrokerBody};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{BrokerIdentityHeader, RegisterBrokerRequestHeader};
use ferrocket_protocol::record::body_crc;
use ferrocket_protocol::RemotingCommand;
use futures_lite::future;
use std::rc::Rc;
use std::time::Duration;

use crate::services::namesrv::HEARTBEAT_TIMEOUT_MS;
use crate::shard::Shard;

fn register_request(shard: &Shard) -> Option<RemotingCommand> {
    let control = shard.control_plane()?;
    let config = shard.config();
    // RocketMQ's compressed form (`compressedRegister`): the JSON form of a
    // broker with ~100,000 topics passes the 16 MiB frame limit, and a
    // broker whose registration fails drops out of every route.
    let mut topics = control.topics.read(Clone::clone);
    // The name server updates a broker's queues only when the version
    // differs: each disk-state change is a new one (Java bumps the topic
    // table's version when the broker permission changes).
    // So is each online settings change (brokerPermission among them).
    let changes = shard.store().disk_full_changes() + shard.config_version().0;
    topics.data_version.counter = topics
        .data_version
        .counter
        .saturating_add(i64::try_from(changes).unwrap_or(i64::MAX));
    topics.data_version.state_version = config.controller_mode.state_version;
    // A full disk routes the broker as read-only, so producers pick other
    // brokers and consumers keep reading; a `brokerPermission` without
    // read or write masks every topic's perm with it, as Java's does.
    let mut mask = config.broker_permission | perm::INHERIT;
    if shard.store().is_disk_full() {
        mask &= !perm::WRITE;
    }
    if mask & perm::READ_WRITE != perm::READ_WRITE {
        for topic in topics.topic_config_table.values_mut() {
            topic.perm &= mask;
        }
    }
    let body = encode_compressed(&RegisterBrokerBody {
        topic_config_serialize_wrapper: topics,
        filter_server_list: Vec::new(),
    });
    let header = RegisterBrokerRequestHeader {
        broker_name: config.broker_name.clone(),
        broker_addr: shard.env().broker_addr.clone(),
        cluster_name: config.broker_cluster_name.clone(),
        ha_server_addr: ha_server_addr(shard),
        broker_id: config.broker_id,
        heartbeat_timeout_millis: Some(heartbeat_timeout_ms(&config.replication)),
        enable_acting_master: Some(config.replication.enable_slave_acting_master),
        compressed: true,
        body_crc32: Some(body_crc(&body)),
    };
    let mut request = RemotingCommand::request(request_code::REGISTER_BROKER).with_body(body);
    request.ext_fields = header.to_ext();
    Some(request)
}

/// The expiry announced: Java's 10 s `brokerNotActiveTimeoutMillis` with
/// `enableSlaveActingMaster` (heartbeats keep it alive), else 120 s.
fn heartbeat_timeout_ms(replication: &crate::config::ReplicationConfig) -> i64 {
    match replication.enable_slave_acting_master {
        true => i64::try_from(replication.broker_not_active_timeout_ms).unwrap_or(i64::MAX),
        false => HEARTBEAT_TIMEOUT_MS,
    }
}

/// `brokerIP2:haListenPort`, where slaves connect.
/// Any shard: the port bound where shard 0 knows it, else the configured
/// one (never an ephemeral 0).
pub(crate) fn ha_server_addr(shard: &Shard) -> Option<String> {
    let config = shard.config();
    let ip = config.ha_ip().ok()?;
    let bound = shard.control_plane().and_then(|c| c.ha.listen.get());
    let port = match bound {
        Some(addr) => addr.port(),
        None => config.replication.ha_port(shard.env().listen.port()).ok()?,
    };
    (port != 0).then(|| std::net::SocketAddr::new(ip, port).to_string())
}

/// A slave learns its master from the answer (`haServerAddr`, `masterAddr`:
/// filled when the name server lists a live master of the same name).
fn learn_master(shard: &Shard, answer: &RemotingCommand) {
    let Some(control) = shard.control_plane() else {
        return;
    };
    if !shard.config().replication.broker_role.is_slave() {
        return;
    }
    let field = |name| {
        answer
            .ext_fields
            .get(name)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let (ha_addr, broker_addr) = (field("haServerAddr"), field("masterAddr"));
    let mut master = control.ha.master.borrow_mut();
    if ha_addr.is_some() && (master.ha_addr != ha_addr || master.broker_addr != broker_addr) {
        tracing::info!(ha = ?ha_addr, broker = ?broker_addr, "the name server names this slave's master");
    }
    if ha_addr.is_some() {
        master.ha_addr = ha_addr;
    }
    if broker_addr.is_some() {
        master.broker_addr = broker_addr;
    }
}

/// Registers with every name server; returns how many accepted.
pub(crate) async fn register_all(shard: &Shard) -> usize {
    let Some(request) = register_request(shard) else {
        return 0;
    };
    let timeout_ms = shard.config().register_broker_timeout_ms;
    let mut accepted = 0;
    let Some(control) = shard.control_plane() else {
        return 0;
    };
    for addr in &shard.env().namesrvs {
        match control
            .namesrv
            .call(*addr, request.clone(), timeout_ms)
            .await
        {
            Ok(answer) if answer.code == response_code::SUCCESS => {
                learn_master(shard, &answer);
                accepted += 1
            }
            Ok(answer) => {
                tracing::warn!(%addr, code = answer.code, remark = ?answer.remark, "name server refused registration")
            }
            Err(err) => tracing::warn!(%addr, %err, "registering with a name server failed"),
        }
    }
    accepted
}

/// Unregisters from every name server (shutdown).
pub(crate) async fn unregister_all(shard: &Shard) {
    let config = shard.config();
    let header = BrokerIdentityHeader {
        broker_name: config.broker_name.clone(),
        broker_addr: shard.env().broker_addr.clone(),
        cluster_name: config.broker_cluster_name.clone(),
        broker_id: Some(config.broker_id),
    };
    let mut request = RemotingCommand::request(request_code::UNREGISTER_BROKER);
    request.ext_fields = header.to_ext();
    let Some(control) = shard.control_plane() else {
        return;
    };
    for addr in &shard.env().namesrvs {
        let answer = control
            .namesrv
            .call(*addr, request.clone(), config.register_broker_timeout_ms)
            .await;
        if let Err(err) = answer {
            tracing::warn!(%addr, %err, "unregistering from a name server failed");
        }
    }
}

/// First wait before registering again with a name server that failed.
const REGISTER_RETRY_MS_MIN: u64 = 500;

/// Registers at start, then every interval and whenever topics change,
/// until the shard stops. Shard 0 only.
pub(crate) async fn registration_loop(shard: Rc<Shard>) {
    let Some(control) = shard.control_plane() else {
        return;
    };
    if shard.env().namesrvs.is_empty() {
        return;
    }
    let interval = Duration::from_millis(shard.config().register_broker_interval_ms);
    // A name server that refused or was not up yet (`ferrocket start` runs
    // both at once) is tried again soon, backing off to the interval.
    let mut retry = Duration::from_millis(REGISTER_RETRY_MS_MIN);
    loop {
        let disk_full = shard.store().is_disk_full();
        let accepted = register_all(&shard).await;
        let total = shard.env().namesrvs.len();
        tracing::debug!(accepted, total, disk_full, "registered with name servers");
        let wait = match accepted < total {
            true => retry.min(interval),
            false => interval,
        };
        retry = match accepted < total {
            true => retry.saturating_mul(2),
            false => Duration::from_millis(REGISTER_RETRY_MS_MIN),
        };
        let wake = future::or(glommio::timer::sleep(wait), control.register_now.wait());
        let wake = future::or(wake, disk_state_change(&shard, disk_full));
        if shard.stopping().interrupts(wake).await {
            return;
        }
    }
}

/// Resolves once the store's disk-full state differs from `registered`:
/// the routes must say at once whether this broker takes writes.
async fn disk_state_change(shard: &Shard, registered: bool) {
    const DISK_POLL_MS: u64 = 500;
    while shard.store().is_disk_full() == registered {
        glommio::timer::sleep(Duration::from_millis(DISK_POLL_MS)).await;
    }
}
