//! The supervisor of a broker with `enableControllerMode=true`: the
//! controller, not the config, says whether this broker is its set's master
//! (RocketMQ's `ReplicasManager`). It registers the broker (broker id and
//! `brokerIdentity` files), sends heartbeats to every controller, asks to be
//! elected when the set has no master, and runs the broker in the role the
//! controller gives: master as brokerId 0 (SYNC_MASTER when a send waits
//! for slave copies), slave as its controller id and SLAVE, copying from
//! the HA address the elected master itself gives (the name server's
//! route, possibly stale after a failover, only when the master does not
//! say).
//!
//! Roles change in the running broker, as Java's do (`role::in_place`): a
//! slave elected, a master deposed, a slave following a new master keep
//! their store, shards and listeners. A broker whose log must be cut back first,
//! and a master elected again at a new epoch, stop the broker's data plane
//! and start it again in the new role, in this process; that stop is
//! graceful: everything acknowledged is on disk, and clients reconnect.
//! The role is checked every `syncBrokerMetadataPeriod`, and at
//! once when a controller sends NOTIFY_BROKER_ROLE_CHANGED.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ferrocket_client::{ConnectionConfig, Credentials};
use ferrocket_controller::member::{ControllerClient, MasterInfo, Member, MemberError};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::controller::BrokerHeartbeatRequestHeader;

use super::state::{MasterLease, RoleHandover, RoleState};
use super::{isr, peers, truncate};
use crate::config::{BrokerConfig, BrokerRole};
use crate::BrokerHandles;

/// How long a call to a controller may take.
const CONTROLLER_CALL_TIMEOUT_MS: u64 = 3_000;
/// The supervisor's tick: how soon it sees a stop, a notice or a dead run.
pub(super) const TICK_MS: u64 = 50;
/// Between failed registrations or elections.
pub(super) const RETRY_MS: u64 = 1_000;

/// Runs the broker in controller mode until `stop` is set.
pub fn run(
    config: BrokerConfig,
    handles: BrokerHandles,
    stop: Arc<AtomicBool>,
) -> Result<(), String> {
    if config.listen_port == 0 {
        return Err(
            "controller mode needs a fixed listenPort: the controller records the broker's address"
                .into(),
        );
    }
    config.validate().map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("controller mode: {e}"))?;
    runtime.block_on(Supervisor::new(config, handles, stop)?.run())
}

/// How the supervisor dials the servers it reports to as this broker (the
/// controllers, and other brokers): signed with its
/// `innerClientAuthenticationCredentials`, over TLS when `useTLS` (or
/// `tls.enable`, or an enforcing mode) says so, as its name server
/// registration does.
fn connections(config: &BrokerConfig) -> Result<ConnectionConfig, String> {
    let tls = crate::start::outbound_tls(config).map_err(|e| e.to_string())?;
    let credentials = config.inner_credentials.clone().map(Credentials::from);
    Ok(ConnectionConfig {
        credentials,
        tls,
        ..ConnectionConfig::default()
    })
}

/// One run of the broker's data plane, on its own thread.
pub(super) struct BrokerRun {
    stop: Arc<AtomicBool>,
    role: RoleState,
    thread: Option<JoinHandle<Result<(), String>>>,
}

impl BrokerRun {
    fn start(
        config: BrokerConfig,
        handles: BrokerHandles,
        role: RoleState,
    ) -> Result<Self, String> {
        let stop = Arc::new(AtomicBool::new(false));
        // Nothing of a previous run (whose log may since have been cut) is
        // reported until this one publishes.
        role.progress.clear();
        let (run_stop, run_role) = (Arc::clone(&stop), role.clone());
        let thread = std::thread::Builder::new()
            .name("broker-run".into())
            .spawn(move || {
                crate::start::run_in_role(config, handles, run_role, run_stop)
                    .map_err(|e| format!("broker: {e}"))
            })
            .map_err(|e| format!("cannot start the broker thread: {e}"))?;
        Ok(Self {
            stop,
            role,
            thread: Some(thread),
        })
    }

    pub(super) fn ended(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops the run; `handover` when the next run starts in another role
    /// at once (see [`RoleHandover`]).
    fn stop(mut self, handover: bool) -> Result<(), String> {
        if handover {
            self.role.handover.set();
        }
        self.stop.store(true, Ordering::Release);
        let ended = match self.thread.take() {
            Some(thread) => thread
                .join()
                .map_err(|_| "the broker thread panicked".to_string())?,
            None => Ok(()),
        };
        self.role.progress.clear();
        ended
    }
}

/// Why watching a run ended.
enum Outcome {
    Stopped,
    /// The master is now this (or none).
    MasterChanged(Option<MasterInfo>),
    /// The run ended by itself (a failed start or a fatal error).
    Ended,
}

pub(super) struct Supervisor {
    pub(super) base: BrokerConfig,
    /// Handed to each run beside its config.
    handles: BrokerHandles,
    /// The handles every run shares (role notices and orders, the in-sync
    /// set, the published HA progress); each run adds its own lease and
    /// handover flag.
    pub(super) shared: RoleState,
    stop: Arc<AtomicBool>,
    client: ControllerClient,
    pub(super) member: Member,
    /// This broker's id in the controller (never 0).
    pub(super) id: i64,
    /// When the request behind the newest master info was sent: a lease
    /// runs from there, never from when the answer came.
    pub(super) asked_at: Instant,
    isr: isr::IsrKeeper,
}

impl Supervisor {
    fn new(
        base: BrokerConfig,
        handles: BrokerHandles,
        stop: Arc<AtomicBool>,
    ) -> Result<Self, String> {
        let controllers = base.controller_mode.controllers();
        let address = format!(
            "{}:{}",
            base.advertised_ip().map_err(|e| e.to_string())?,
            base.listen_port
        );
        let member = Member {
            cluster: base.broker_cluster_name.clone(),
            broker_name: base.broker_name.clone(),
            address,
        };
        let timeout = Duration::from_millis(CONTROLLER_CALL_TIMEOUT_MS);
        let connections = connections(&base)?;
        peers::connect_as(connections.clone());
        Ok(Self {
            client: ControllerClient::with_config(controllers, timeout, connections),
            isr: isr::IsrKeeper::default(),
            shared: RoleState::default(),
            base,
            handles,
            stop,
            member,
            id: 0,
            asked_at: Instant::now(),
        })
    }

    pub(super) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Sleeps `ms`, or less when stopping; true when stopping.
    pub(super) async fn pause(&self, ms: u64) -> bool {
        let until = Instant::now() + Duration::from_millis(ms);
        while Instant::now() < until {
            if self.stopping() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(TICK_MS)).await;
        }
        self.stopping()
    }

    async fn run(mut self) -> Result<(), String> {
        let identity = self
            .base
            .controller_mode
            .identity_file(&self.base.store_path_root_dir);
        let mut master = loop {
            self.asked_at = Instant::now();
            match self.client.register(&self.member, &identity).await {
                Ok((id, master)) => {
                    self.id = id;
                    tracing::info!(broker_id = id, ?master, "registered with the controller");
                    break master;
                }
                // Brokers of a new set apply for ids at once, and all but
                // one lose each round: expected, not a fault.
                Err(MemberError::Refused { code, .. })
                    if code == response_code::CONTROLLER_BROKER_ID_INVALID =>
                {
                    tracing::info!(
                        "another broker of the set took the id applied for; applying for the next"
                    )
                }
                Err(e) => tracing::warn!("registering with the controller: {e}"),
            }
            if self.pause(RETRY_MS).await {
                return Ok(());
            }
        };
        loop {
            let current = match master.take() {
                Some(current) => current,
                None => match self.elect().await {
                    Some(current) => current,
                    None if self.pause(RETRY_MS).await => return Ok(()),
                    None => continue,
                },
            };
            let follow_at = match current.broker_id == self.id {
                true => None,
                false => peers::ha_server_addr(&current.address).await,
            };
            if current.broker_id != self.id && !self.ready_to_follow(&current).await? {
                master = self.replica_info().await.ok().flatten();
                if self.pause(RETRY_MS).await {
                    return Ok(());
                }
                continue;
            }
            let (config, role) = self.config_for(&current, follow_at);
            let lease = role.lease.clone();
            let run = BrokerRun::start(config, self.handles.clone(), role)?;
            let mut current = current;
            let outcome = loop {
                let outcome = self.watch(&current, &run, &lease).await;
                let Outcome::MasterChanged(next) = &outcome else {
                    break outcome;
                };
                let noticed = Instant::now();
                match self
                    .change_in_place(&current, next.clone(), &run, &lease)
                    .await
                {
                    Some(now) => {
                        let took_ms = noticed.elapsed().as_millis() as u64;
                        tracing::info!(master = ?now, took_ms, "the master changed: took the new role in place");
                        current = now;
                    }
                    None => break outcome,
                }
            };
            let stopped = run.stop(matches!(outcome, Outcome::MasterChanged(_)));
            match outcome {
                Outcome::Stopped => return stopped,
                Outcome::Ended => return stopped.and(Err("the broker stopped by itself".into())),
                Outcome::MasterChanged(next) => {
                    stopped?;
                    tracing::info!(?next, "the master changed: restarting in the new role");
                    master = next;
                }
            }
        }
    }

    /// Cuts this broker's log back to its agreement with the master before
    /// following it; false while that cannot be told yet.
    async fn ready_to_follow(&self, master: &MasterInfo) -> Result<bool, String> {
        // Stay visible to the controller while waiting.
        self.heartbeat(None).await;
        truncate::prepare_to_follow(&self.base, &master.address).await
    }

    /// A heartbeat (so the controller sees this broker alive), then asks to
    /// be elected; the answer names the master, this broker or another.
    pub(super) async fn elect(&mut self) -> Option<MasterInfo> {
        self.heartbeat(None).await;
        self.asked_at = Instant::now();
        match self.client.elect(&self.member, self.id).await {
            Ok(master) => master,
            Err(e) => {
                tracing::warn!("asking the controller for a master: {e}");
                None
            }
        }
    }

    /// The broker's config and handles for a run under `master`; a slave
    /// copies from `master_ha` (the master's own answer), else from where
    /// the name server's route says (a master that does not say, as Java's).
    fn config_for(
        &self,
        master: &MasterInfo,
        master_ha: Option<String>,
    ) -> (BrokerConfig, RoleState) {
        let mut config = self.base.clone();
        let mut role = RoleState {
            controller_id: Some(self.id),
            handover: RoleHandover::default(),
            lease: MasterLease::default(),
            ..self.shared.clone()
        };
        config.controller_mode.state_version = i64::from(master.epoch);
        if master.broker_id == self.id {
            config.broker_id = 0;
            // Java's controller-mode master is a SYNC_MASTER; how many
            // copies a send waits for is `required_copies`, from the
            // in-sync set the controller gave.
            config.replication.broker_role = BrokerRole::SyncMaster;
            let in_sync = &master.sync_state_set.sync_state_set;
            role.in_sync.set_ids(in_sync);
            config.replication.ha_master_address.clear();
            config.controller_mode.master_epoch = Some(master.epoch);
            let lease = MasterLease::default();
            lease.revoke();
            lease.grant(self.lease_end(self.asked_at));
            role.lease = lease;
        } else {
            config.broker_id = self.id;
            config.replication.broker_role = BrokerRole::Slave;
            role.in_sync.set_ids(&BTreeSet::new());
            config.controller_mode.master_epoch = None;
            if let Some(ha) = master_ha {
                config.replication.ha_master_address = ha;
            }
        }
        (config, role)
    }

    async fn heartbeat(&self, max_offset: Option<i64>) {
        let mode = &self.base.controller_mode;
        let header = BrokerHeartbeatRequestHeader {
            cluster_name: self.member.cluster.clone(),
            broker_addr: self.member.address.clone(),
            broker_name: self.member.broker_name.clone(),
            broker_id: Some(self.id),
            epoch: Some(truncate::last_epoch(&self.base)),
            max_offset: Some(max_offset.unwrap_or(-1)),
            confirm_offset: Some(max_offset.unwrap_or(-1)),
            heartbeat_timeout_mills: Some(mode.controller_heartbeat_timeout_ms as i64),
            election_priority: Some(mode.broker_election_priority),
        };
        self.client.heartbeat_all(&header).await;
    }

    /// Heartbeats, role checks and (as master) lease renewal and in-sync
    /// set upkeep while the run lasts. A master confirms its role every
    /// heartbeat interval, since each confirmation extends its lease.
    async fn watch(
        &mut self,
        current: &MasterInfo,
        run: &BrokerRun,
        lease: &MasterLease,
    ) -> Outcome {
        let mode = self.base.controller_mode.clone();
        let is_master = current.broker_id == self.id;
        let check_ms = match is_master {
            true => mode
                .sync_broker_metadata_period_ms
                .min(mode.broker_heartbeat_interval_ms),
            false => mode.sync_broker_metadata_period_ms,
        };
        let notices_seen = self.shared.notices.clone();
        let mut notices = notices_seen.count();
        let (mut last_beat, mut last_check, mut last_isr) =
            (None::<Instant>, Instant::now(), None::<Instant>);
        let due = |at: Option<Instant>, ms: u64| {
            at.is_none_or(|at| at.elapsed() >= Duration::from_millis(ms))
        };
        let mut lapsed = false;
        self.isr.reset();
        loop {
            if self.stopping() {
                return Outcome::Stopped;
            }
            if run.ended() {
                return Outcome::Ended;
            }
            if due(last_beat, mode.broker_heartbeat_interval_ms) {
                last_beat = Some(Instant::now());
                let end = self.shared.progress.written();
                self.heartbeat(end).await;
            }
            let noticed = notices_seen.count() != notices;
            if noticed || due(Some(last_check), check_ms) {
                notices = notices_seen.count();
                last_check = Instant::now();
                match self.replica_info().await {
                    Ok(seen) if !same_master(seen.as_ref(), current) => {
                        lease.revoke();
                        return Outcome::MasterChanged(seen);
                    }
                    Ok(_) if is_master => lease.grant(self.lease_end(self.asked_at)),
                    Ok(_) => {}
                    Err(e) => tracing::warn!("asking the controller for the master: {e}"),
                }
            }
            if is_master && lapsed == lease.valid() {
                lapsed = !lapsed;
                match lapsed {
                    true => tracing::warn!("no controller confirmed this master within its lease: writes that need replicas are not acknowledged"),
                    false => tracing::info!("a controller confirmed this master again: acknowledging"),
                }
            }
            let isr_ms = self.isr.next_check_ms(
                mode.check_sync_state_set_period_ms,
                mode.broker_heartbeat_interval_ms,
            );
            if is_master && due(last_isr, isr_ms) {
                last_isr = Some(Instant::now());
                self.isr
                    .check(
                        &self.client,
                        &self.base,
                        &self.shared,
                        &self.member,
                        self.id,
                    )
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(TICK_MS)).await;
        }
    }

    /// GET_REPLICA_INFO, noting when it was sent.
    pub(super) async fn replica_info(&mut self) -> Result<Option<MasterInfo>, MemberError> {
        self.asked_at = Instant::now();
        self.client.replica_info(&self.member.broker_name).await
    }

    /// Where a lease granted on an answer to a request sent at `asked_at`
    /// ends: half the controller's heartbeat timeout later, well before the
    /// controller could declare this broker dead and elect another.
    pub(super) fn lease_end(&self, asked_at: Instant) -> Instant {
        let timeout = self.base.controller_mode.controller_heartbeat_timeout_ms;
        asked_at + Duration::from_millis(timeout / 2)
    }
}

pub(super) fn same_master(seen: Option<&MasterInfo>, current: &MasterInfo) -> bool {
    seen.is_some_and(|seen| seen.broker_id == current.broker_id && seen.epoch == current.epoch)
}
