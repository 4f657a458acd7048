//! One controller: the Raft node, the live-broker table, and the write path
//! that turns a request into a decision and commits its events (RocketMQ's
//! `ControllerManager` with `DLedgerController`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ferrocket_client::pool::ConnectionPool;
use ferrocket_protocol::body::{encode_json, SyncStateSet};
use ferrocket_protocol::codes::{request_code, response_code as rc};
use ferrocket_protocol::header::controller::{
    ElectMasterRequestHeader, ElectMasterResponseHeader, NotifyBrokerRoleChangedRequestHeader,
};
use ferrocket_protocol::RemotingCommand;
use openraft::{BasicNode, ServerState};

use crate::config::{ControllerConfig, Peer};
use crate::live::{BrokerKey, LiveAt, LiveTable};
use crate::raft::store::Store;
use crate::raft::{ControllerRaft, Events};
use crate::rules::{self, Decision, Liveness, Reply};
use crate::settings::LiveSettings;
use crate::state::ControllerState;

/// One controller of the group.
pub struct Controller {
    /// The settings as started; those read while running are in `settings`.
    pub(crate) config: ControllerConfig,
    pub(crate) settings: LiveSettings,
    pub(crate) node_id: u64,
    pub(crate) raft: ControllerRaft,
    store: Store,
    live: Mutex<LiveTable>,
    /// Decisions are made and committed one at a time, so each sees the
    /// state its predecessor left (Java's single-threaded event scheduler).
    write_turn: tokio::sync::Mutex<()>,
    /// Connections to brokers, for NOTIFY_BROKER_ROLE_CHANGED.
    brokers: ConnectionPool,
    /// With `aclEnable=true`: the accounts every request is checked against.
    pub(crate) acl: Option<Arc<ferrocket_acl::AclStore>>,
}

/// The Raft members: node id = position in the peer list.
pub fn members(peers: &[Peer]) -> BTreeMap<u64, BasicNode> {
    peers
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                i as u64,
                BasicNode {
                    addr: p.addr.clone(),
                },
            )
        })
        .collect()
}

impl Controller {
    pub(crate) fn new(
        config: ControllerConfig,
        node_id: u64,
        raft: ControllerRaft,
        store: Store,
        brokers: ConnectionPool,
        acl: Option<Arc<ferrocket_acl::AclStore>>,
    ) -> Self {
        Self {
            settings: LiveSettings::new(&config),
            config,
            node_id,
            raft,
            store,
            live: Mutex::new(LiveTable::default()),
            write_turn: tokio::sync::Mutex::new(()),
            brokers,
            acl,
        }
    }

    pub(crate) fn live(&self) -> MutexGuard<'_, LiveTable> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether this controller is the Raft leader now.
    pub fn is_leader(&self) -> bool {
        let metrics = self.raft.metrics();
        let metrics = metrics.borrow();
        metrics.state == ServerState::Leader && metrics.current_leader == Some(self.node_id)
    }

    /// The leader's peer entry, when one is known.
    pub fn leader(&self) -> Option<&Peer> {
        let leader = self.raft.metrics().borrow().current_leader?;
        self.config.peers.get(usize::try_from(leader).ok()?)
    }

    pub(crate) fn not_leader(&self) -> Reply {
        let leader = self.leader().map_or_else(
            || "unknown".to_string(),
            |p| format!("{} at {}", p.id, p.addr),
        );
        Reply::error(
            rc::CONTROLLER_NOT_LEADER,
            format!("this controller is not the leader; the leader is {leader}"),
        )
    }

    /// Answers a read from the leader's applied state, once the leader has
    /// confirmed it leads and applied everything committed before (a new
    /// leader may not have applied its predecessors' last entries yet).
    pub(crate) async fn read(
        &self,
        f: impl FnOnce(&ControllerState, &dyn Liveness) -> Reply,
    ) -> Reply {
        if !self.is_leader() || self.raft.ensure_linearizable().await.is_err() {
            return self.not_leader();
        }
        let live = self.live();
        let view = LiveAt {
            table: &live,
            now: Instant::now(),
        };
        self.store.read(|state| f(state, &view))
    }

    /// Decides on the leader's up-to-date state, commits the decision's
    /// events through Raft, then answers.
    pub(crate) async fn write(
        &self,
        rule: impl FnOnce(&ControllerState, &dyn Liveness) -> Decision,
    ) -> Reply {
        let _turn = self.write_turn.lock().await;
        if let Err(e) = self.raft.ensure_linearizable().await {
            tracing::debug!("controller: not leader for a write: {e}");
            return self.not_leader();
        }
        let decision = {
            let live = self.live();
            let view = LiveAt {
                table: &live,
                now: Instant::now(),
            };
            self.store.read(|state| rule(state, &view))
        };
        if decision.events.is_empty() {
            return decision.reply;
        }
        match self.raft.client_write(Events(decision.events)).await {
            Ok(_) => decision.reply,
            Err(e) if e.forward_to_leader::<BasicNode>().is_some() => self.not_leader(),
            Err(e) => Reply::error(rc::SYSTEM_ERROR, format!("the controller log refused: {e}")),
        }
    }

    /// A broker is gone (heartbeats stopped, or its connection closed): if
    /// it was its set's master, elect anew.
    pub(crate) async fn on_broker_inactive(self: &Arc<Self>, key: BrokerKey) {
        tracing::info!(
            "controller: broker {}/{} id {} is inactive",
            key.cluster,
            key.broker_name,
            key.broker_id
        );
        if !self.is_leader() {
            return;
        }
        let was_master = self.store.read(|state| {
            state
                .set(&key.broker_name)
                .is_some_and(|set| set.master_id == Some(key.broker_id))
        });
        if was_master {
            self.trigger_election(&key.broker_name).await;
        }
    }

    /// Elects a master for `broker_name` on the controller's own initiative,
    /// retrying a few times, and tells the set's brokers.
    pub(crate) async fn trigger_election(self: &Arc<Self>, broker_name: &str) {
        let request = ElectMasterRequestHeader {
            broker_name: broker_name.to_string(),
            broker_id: Some(-1),
            ..Default::default()
        };
        let unclean = self.settings.elect_unclean_master();
        for attempt in 1..=self.settings.elect_master_max_retry_count().max(1) {
            let reply = self
                .write(|state, live| rules::elect_master(state, live, &request, unclean))
                .await;
            tracing::info!(
                "controller: election for {broker_name} (attempt {attempt}): code {} {}",
                reply.code,
                reply.remark.as_deref().unwrap_or_default()
            );
            match reply.code {
                rc::SUCCESS => {
                    self.notify_role_changed(broker_name, &reply).await;
                    return;
                }
                rc::CONTROLLER_NOT_LEADER | rc::SYSTEM_ERROR => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                _ => return,
            }
        }
    }

    /// Sends NOTIFY_BROKER_ROLE_CHANGED to every live broker of the set
    /// after an election answered with `elected`.
    pub(crate) async fn notify_role_changed(self: &Arc<Self>, broker_name: &str, elected: &Reply) {
        if !self.settings.notify_broker_role_changed() {
            return;
        }
        let Ok(header) = ElectMasterResponseHeader::from_ext(&elected.ext) else {
            return;
        };
        let Some(master) = header.master_broker_id else {
            return;
        };
        let members = self.store.read(|state| {
            state.set(broker_name).map(|set| {
                let members: Vec<(BrokerKey, String)> = set
                    .members
                    .iter()
                    .map(|(id, m)| {
                        let key = BrokerKey {
                            cluster: set.cluster_name.clone(),
                            broker_name: set.broker_name.clone(),
                            broker_id: *id,
                        };
                        (key, m.address.clone())
                    })
                    .collect();
                (members, set.sync_state_set.clone())
            })
        });
        let Some((members, sync_state_set)) = members else {
            return;
        };
        let notify = NotifyBrokerRoleChangedRequestHeader {
            master_address: header.master_address.clone(),
            master_epoch: header.master_epoch,
            sync_state_set_epoch: header.sync_state_set_epoch,
            master_broker_id: Some(master),
        };
        let body = encode_json(&SyncStateSet {
            sync_state_set,
            sync_state_set_epoch: header.sync_state_set_epoch.unwrap_or_default(),
        });
        for (key, address) in members {
            let alive = {
                let live = self.live();
                LiveAt {
                    table: &live,
                    now: Instant::now(),
                }
                .is_alive(&key.cluster, &key.broker_name, key.broker_id)
            };
            if !alive {
                continue;
            }
            let mut request = RemotingCommand::request(request_code::NOTIFY_BROKER_ROLE_CHANGED)
                .with_body(body.clone());
            request.ext_fields = notify.to_ext();
            if let Err(e) = self.brokers.invoke_oneway(&address, request).await {
                log_unnotified(&address, &e);
            }
        }
    }

    /// One pass of the periodic scans: expire silent brokers; on the leader,
    /// elect for every set whose master is dead while a member lives.
    pub(crate) async fn scan(self: &Arc<Self>, reelect: bool) {
        let gone = self.live().expire(Instant::now());
        for key in gone {
            self.on_broker_inactive(key).await;
        }
        if reelect && self.is_leader() {
            let names = {
                let live = self.live();
                let view = LiveAt {
                    table: &live,
                    now: Instant::now(),
                };
                self.store
                    .read(|state| rules::sets_needing_election(state, &view))
            };
            for name in names {
                self.trigger_election(&name).await;
            }
        }
    }
}

/// A notice of a new master that did not reach a live broker. A broker
/// registers (and a new set's first broker is elected) before it listens,
/// so a refused connection is what a starting broker gives: not an alarm,
/// since it learns the master at its next check (`syncBrokerMetadataPeriod`).
fn log_unnotified(address: &str, error: &ferrocket_client::ClientError) {
    let refused = matches!(
        error,
        ferrocket_client::ClientError::Connect { source, .. }
            if source.kind() == std::io::ErrorKind::ConnectionRefused
    );
    if refused {
        tracing::info!(
            "controller: {address} does not listen yet (a starting broker registers first): it \
             learns of the new master at its next check"
        );
    } else {
        tracing::warn!("controller: cannot notify {address} of the new master: {error}");
    }
}
