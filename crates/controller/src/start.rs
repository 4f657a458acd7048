//! Starting and stopping a controller: its own thread with a small tokio
//! runtime (openraft runs on tokio), the Remoting server, the Raft node and
//! the periodic scans.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use ferrocket_client::connection::ConnectionConfig;
use ferrocket_client::pool::ConnectionPool;
use openraft::storage::Adaptor;
use tokio::sync::oneshot;

use crate::config::{ConfigError, ControllerConfig};
use crate::node::{members, Controller};
use crate::raft::network::Network;
use crate::raft::store::Store;
use crate::raft::ControllerRaft;

/// Worker threads of a controller's runtime: its load is a few requests and
/// heartbeats per broker per second.
const WORKER_THREADS: usize = 2;
/// How long [`start`] waits for the controller to be up.
pub const START_TIMEOUT_MS: u64 = 30_000;

#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("controller config: {0}")]
    Config(#[from] ConfigError),
    #[error("controller I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("controller Raft: {0}")]
    Raft(String),
    #[error("the controller thread stopped before it was up")]
    Panicked,
}

/// A running controller.
pub struct ControllerHandle {
    addr: SocketAddr,
    controller: Arc<Controller>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ControllerHandle {
    /// The address brokers and peers reach it on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether it is the Raft leader now.
    pub fn is_leader(&self) -> bool {
        self.controller.is_leader()
    }

    /// Stops it and waits for its thread.
    pub fn stop(mut self) {
        self.shutdown_now();
    }

    fn shutdown_now(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ControllerHandle {
    fn drop(&mut self) {
        self.shutdown_now();
    }
}

/// Starts a controller listening on its own peer address.
pub fn start(config: ControllerConfig) -> Result<ControllerHandle, ControllerError> {
    let index = config.validate()?;
    let listener = std::net::TcpListener::bind(&config.peers[index].addr)?;
    start_on(config, listener)
}

/// Starts a controller on a listener already bound (tests bind all peers'
/// ports first, so that each knows the others').
pub fn start_on(
    config: ControllerConfig,
    listener: std::net::TcpListener,
) -> Result<ControllerHandle, ControllerError> {
    let index = config.validate()?;
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let (ready_tx, ready_rx) = mpsc::channel();
    let (shutdown_tx, shutdown_rx) = oneshot::channel();
    let thread = std::thread::Builder::new()
        .name(format!("controller-{}", config.self_id))
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(WORKER_THREADS)
                .thread_name("controller")
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = ready_tx.send(Err(ControllerError::Io(e)));
                    return;
                }
            };
            runtime.block_on(run_node(config, index, listener, ready_tx, shutdown_rx));
        })?;
    let controller = ready_rx
        .recv_timeout(Duration::from_millis(START_TIMEOUT_MS))
        .map_err(|_| ControllerError::Panicked)??;
    tracing::info!("ferrocket controller listening on {addr}");
    Ok(ControllerHandle {
        addr,
        controller,
        shutdown: Some(shutdown_tx),
        thread: Some(thread),
    })
}

/// Runs a controller on the calling thread until `stop` is true.
pub fn run(config: ControllerConfig, stop: Arc<AtomicBool>) -> Result<(), ControllerError> {
    let handle = start(config)?;
    eprintln!("ferrocket controller listening on {}", handle.addr());
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(100));
    }
    handle.stop();
    Ok(())
}

type Ready = mpsc::Sender<Result<Arc<Controller>, ControllerError>>;

async fn run_node(
    config: ControllerConfig,
    index: usize,
    listener: std::net::TcpListener,
    ready: Ready,
    shutdown: oneshot::Receiver<()>,
) {
    let (controller, tasks) = match boot(config, index, listener).await {
        Ok(started) => started,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let _ = ready.send(Ok(controller.clone()));
    let _ = shutdown.await;
    for task in tasks {
        task.abort();
    }
    if let Err(e) = controller.raft.shutdown().await {
        tracing::warn!("controller: Raft shutdown: {e}");
    }
}

async fn boot(
    config: ControllerConfig,
    index: usize,
    listener: std::net::TcpListener,
) -> Result<(Arc<Controller>, Vec<tokio::task::JoinHandle<()>>), ControllerError> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    // A bad ACL file or certificate stops the start, naming it.
    let acl = crate::auth::open_acl(&config)?;
    let tls = crate::auth::server_tls(&config)?;
    let outbound = crate::auth::outbound(&config, peer_connections())?;
    let store = Store::open(&config.store_path)?;
    let fresh = store.is_fresh();
    let raft = new_raft(&config, index, store.clone(), outbound.clone()).await?;
    if fresh {
        // Every peer proposes the same first membership; openraft allows
        // that, and refuses it (harmlessly) once a log exists.
        if let Err(e) = raft.initialize(members(&config.peers)).await {
            tracing::debug!("controller: initialize: {e}");
        }
    }
    let brokers = ConnectionPool::new(outbound, None);
    let node_id = index as u64;
    let controller = Controller::new(config, node_id, raft, store, brokers, acl.clone());
    let controller = Arc::new(controller);
    let serve = crate::server::serve(listener, controller.clone(), tls.clone());
    let mut tasks = vec![tokio::spawn(serve)];
    tasks.push(tokio::spawn(scan_loop(controller.clone())));
    if acl.is_some() || tls.is_some() {
        tasks.push(tokio::spawn(crate::auth::reload_loop(acl, tls)));
    }
    Ok((controller, tasks))
}

fn peer_connections() -> ConnectionConfig {
    ConnectionConfig {
        connect_timeout_ms: 1_000,
        request_timeout_ms: 3_000,
        ..ConnectionConfig::default()
    }
}

async fn new_raft(
    config: &ControllerConfig,
    index: usize,
    store: Store,
    connections: ConnectionConfig,
) -> Result<ControllerRaft, ControllerError> {
    let election_ms = config.election_timeout_ms;
    let raft_config = openraft::Config {
        cluster_name: config.group.clone(),
        heartbeat_interval: (election_ms / 5).max(10),
        election_timeout_min: election_ms,
        election_timeout_max: election_ms * 2,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(config.snapshot_logs),
        max_in_snapshot_log_to_keep: config.snapshot_logs / 10,
        ..Default::default()
    }
    .validate()
    .map_err(|e| ControllerError::Raft(e.to_string()))?;
    let (log_store, state_machine) = Adaptor::new(store);
    let network = Network::new(ConnectionPool::new(connections, None));
    ControllerRaft::new(
        index as u64,
        Arc::new(raft_config),
        network,
        log_store,
        state_machine,
    )
    .await
    .map_err(|e| ControllerError::Raft(e.to_string()))
}

/// Expires silent brokers every `scanNotActiveBrokerInterval`, and on the
/// leader re-elects for dead masters every `scanInactiveMasterInterval`.
async fn scan_loop(controller: Arc<Controller>) {
    let expire = Duration::from_millis(controller.config.scan_not_active_broker_interval_ms);
    let reelect = Duration::from_millis(controller.config.scan_inactive_master_interval_ms);
    let mut since_reelect = Duration::ZERO;
    loop {
        let step = expire.min(reelect);
        tokio::time::sleep(step).await;
        since_reelect += step;
        let due = since_reelect >= reelect;
        if due {
            since_reelect = Duration::ZERO;
        }
        controller.scan(due).await;
    }
}
