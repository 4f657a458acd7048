//! Starting and stopping a broker: open the store (recovery), start the
//! CommitLog appender and one shard per configured core, serve until the
//! stop flag is set, then stop in order (serving, offsets, store).

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use ferrocket_runtime::lock::ProcessLock;
use ferrocket_runtime::server::{
    bind_listener, bind_waiting, flag_set, serve, ServerConfig, STOP_POLL_INTERVAL_MS,
};
use ferrocket_runtime::shard::{
    mesh_endpoints, owner_shard, start_shards, AnyReply, ErasedCall, MeshEndpoints, MeshHandler,
    ShardContext, Versioned, MESH_IN_FLIGHT_MAX_DEFAULT, MESH_RING_CAPACITY_DEFAULT,
};
use ferrocket_store::{
    AppenderHandle, AppenderParts, MessageStore, Placement, QueueOwnerFn, ShardPort, ShardStore,
    StoreHandle,
};
use glommio::net::TcpListener;
use socket2::{Domain, Protocol, Socket, Type};

use crate::clock::now_ms;
use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::role::state::RoleState;
use crate::services::delay_levels::DelayLevels;
use crate::services::offsets::{OffsetFile, OFFSETS_FILE};
use crate::services::topics::{self, TopicTable};
use crate::shard::{BrokerEnv, LoadedState, Shard};

/// A shard's unconnected ends of the call mesh.
type ShardEndpoints = MeshEndpoints<Box<dyn ErasedCall<Shard>>, AnyReply>;

/// What moves into each shard's executor.
struct ShardInput {
    port: ShardPort,
    /// `listenPort - 2` with `fastListenPortEnable`.
    fast: Option<SocketAddr>,
    mesh: ShardEndpoints,
    env: Arc<BrokerEnv>,
    ready: mpsc::Sender<Result<(), ShardStartError>>,
}

/// Binds `addr` to learn that it is free (and the port, when 0 was asked),
/// then holds it with a bound, non-listening SO_REUSEPORT socket until
/// every shard has its own listener on it.
fn reserve_port(
    addr: SocketAddr,
    port_key: &'static str,
) -> Result<(SocketAddr, Socket), BrokerError> {
    let bind_err = |source| BrokerError::Bind {
        addr,
        source,
        port_key,
    };
    let domain = Domain::for_address(addr);
    // Without SO_REUSEPORT, so it fails while any listener (a killed
    // broker's, still closing) holds the port, instead of sharing it.
    let probe = bind_waiting(addr, || {
        let probe = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
        probe.set_reuse_address(true)?;
        probe.bind(&addr.into())?;
        Ok(probe)
    })
    .map_err(bind_err)?;
    let actual = probe
        .local_addr()
        .map_err(bind_err)?
        .as_socket()
        .ok_or_else(|| BrokerError::Config(format!("{addr} is not an IP socket address")))?;
    drop(probe);
    let holder = Socket::new(domain, Type::STREAM, Some(Protocol::TCP)).map_err(bind_err)?;
    holder.set_reuse_address(true).map_err(bind_err)?;
    holder.set_reuse_port(true).map_err(bind_err)?;
    holder.bind(&actual.into()).map_err(bind_err)?;
    Ok((actual, holder))
}

/// With `fastListenPortEnable`: `listenPort - 2` (Java's "fast" port),
/// reserved as the main port is.
fn reserve_fast_port(
    config: &BrokerConfig,
    listen: SocketAddr,
) -> Result<Option<(SocketAddr, Socket)>, BrokerError> {
    if !config.fast_listen_port_enable {
        return Ok(None);
    }
    let port = listen
        .port()
        .checked_sub(2)
        .filter(|p| *p > 0)
        .ok_or_else(|| {
            BrokerError::Config(format!(
                "fastListenPortEnable needs listenPort above 2, not {}",
                listen.port()
            ))
        })?;
    reserve_port(SocketAddr::new(listen.ip(), port), "fastListenPortEnable").map(Some)
}

/// The other ports the broker binds as it starts, its HA port (a master's)
/// and the Prometheus endpoint's: each is bound once and let go here, so a
/// busy one fails the start, in the words of the bind that would have
/// failed later, before the store directory is created.
fn check_other_ports(config: &BrokerConfig, listen: SocketAddr) -> Result<(), BrokerError> {
    if !config.replication.broker_role.is_slave() {
        let port = config.replication.ha_port(listen.port())?;
        reserve_port(SocketAddr::new(config.listen_addr, port), "haListenPort")?;
    }
    if config.metrics.enabled() {
        let addr = config
            .metrics
            .listen(
                &config.broker_ip1,
                config.listen_addr,
                crate::config::METRICS_PROM_PORT_DEFAULT,
            )
            .map_err(BrokerError::Config)?;
        reserve_port(addr, "metricsPromExporterPort")?;
    }
    Ok(())
}

/// Bytes of physical memory, if the system says.
// `c_long` is `i64` here but `i32` on 32-bit targets.
#[allow(clippy::useless_conversion)]
fn physical_memory_bytes() -> Option<i64> {
    // SAFETY: sysconf only reads system configuration values.
    let (pages, page_size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages <= 0 || page_size <= 0 {
        return None;
    }
    Some(i64::from(pages).saturating_mul(i64::from(page_size)))
}

/// Runs a broker of `config`, with the runner's live `handles`, until
/// `stop` is set; blocking. Prints `ferrocket broker listening on {addr}`
/// to stderr once every shard serves.
pub fn run(
    config: BrokerConfig,
    handles: crate::BrokerHandles,
    stop: Arc<AtomicBool>,
) -> Result<(), BrokerError> {
    run_in_role(config, handles, RoleState::default(), stop)
}

/// Controller mode: the tier publishes under this master's epoch, and
/// publishes and adopts by this broker's epoch file.
fn controller_tier(config: &BrokerConfig, store: &StoreHandle) {
    let Some(tier) = store.tier() else {
        return;
    };
    if let Some(epoch) = config.controller_mode.master_epoch {
        tier.set_master_epoch(epoch);
    }
    if config.controller_mode.enabled {
        tier.set_epoch_file(config.epoch_file().path().to_path_buf());
    }
}

/// [`run`] with controller mode's live handles (`role`), which the
/// supervisor (`role::supervisor`) shares with this run.
pub fn run_in_role(
    config: BrokerConfig,
    handles: crate::BrokerHandles,
    role: RoleState,
    stop: Arc<AtomicBool>,
) -> Result<(), BrokerError> {
    config.validate()?;
    let plan = config.shards_config().plan()?;
    let count = plan.shard_count();
    warn_if_oversubscribed(count);
    // Ports first: a busy one stops the start before the store directory
    // is created.
    let (listen, holder) = reserve_port(
        SocketAddr::new(config.listen_addr, config.listen_port),
        "listenPort",
    )?;
    let (fast, fast_holder) = reserve_fast_port(&config, listen)?.unzip();
    check_other_ports(&config, listen)?;
    // Before anything in the store is read or written: one broker per store.
    let _store_lock = ProcessLock::acquire_dir(&config.store_path_root_dir)?;
    if config.namesrv_addr.trim().is_empty() {
        tracing::warn!(
            "namesrvAddr is not set: this broker registers with no name server, so no client \
             can find it; set namesrvAddr=HOST:9876 in the config or pass --namesrv-addr"
        );
    }
    let store_config = config.store_config();
    // A lost disk comes back from the object store before recovery reads it.
    ferrocket_tier::restore_lost_store(&store_config)
        .map_err(|e| BrokerError::Config(e.to_string()))?;
    let (store, parts) = MessageStore::open(store_config)?;
    crate::services::master_epoch::record(&config, store.written_offset())?;
    controller_tier(&config, &store);
    let files = ConfigFiles::load(&store, &config)?;
    // Uploads and remote reads run on a thread of their own.
    let tier = ferrocket_tier::TierService::start(&store)
        .map_err(|e| BrokerError::Config(e.to_string()))?;
    let (appender, ports) = start_appender(&config, parts, count)?;
    let env = Arc::new(files.into_env((config, handles), role, store, listen)?);
    // Ends by itself within one interval of the stop flag.
    let _tls_reloader = match &env.tls {
        Some(tls) => Some(tls.watch(Arc::clone(&stop)).map_err(|e| {
            BrokerError::Config(format!("cannot start the TLS reload thread: {e}"))
        })?),
        None => None,
    };
    let (ready_tx, ready_rx) = mpsc::channel();
    let inputs: Vec<ShardInput> = ports
        .into_iter()
        .zip(mesh_endpoints(count, MESH_RING_CAPACITY_DEFAULT))
        .map(|(port, mesh)| ShardInput {
            port,
            fast,
            mesh,
            env: Arc::clone(&env),
            ready: ready_tx.clone(),
        })
        .collect();
    drop(ready_tx);
    let shards = match start_shards(&plan, inputs, Arc::clone(&stop), shard_main) {
        Ok(shards) => shards,
        Err(err) => {
            stop.store(true, Ordering::SeqCst);
            if let Err(store_err) = appender.join() {
                tracing::warn!(%store_err, "appender ended badly after a failed start");
            }
            return Err(err.into());
        }
    };
    let mut failure = await_ready(&ready_rx, count, &stop);
    if failure.is_none() {
        ferrocket_runtime::server::announce_listening("broker", listen);
        tracing::info!(%listen, shards = count, broker = %env.broker_addr, "broker serving");
        if let Some(fast) = fast {
            tracing::info!(%fast, "also serving on the fast port (listenPort - 2)");
        }
    }
    drop(holder);
    drop(fast_holder);
    for result in shards.join() {
        if let Err(err) = result {
            let error = BrokerError::from(err);
            tracing::error!(%error, "shard failed");
            failure.get_or_insert(error);
        }
    }
    let stored = appender.join();
    if let Some(tier) = tier {
        tier.stop();
    }
    if let Some(error) = failure {
        return Err(error);
    }
    stored?;
    tracing::info!("broker stopped");
    Ok(())
}

/// More shards than cores share cores: each then costs more CPU per message
/// than fewer shards would (tuning/RESULTS.md). Allowed, but said.
fn warn_if_oversubscribed(count: usize) {
    let online = ferrocket_runtime::shard::online_cores();
    if count > online.len() {
        let default = ferrocket_runtime::shard::host_shard_cores(&online).len();
        tracing::warn!(
            "shardCount {count} is more than this host's {} online core(s): shards will share \
             cores and cost more CPU per message; unset shardCount for this host's default \
             ({default} shard(s))",
            online.len()
        );
    }
}

/// Starts the CommitLog appender: on its own thread, or as tasks of the one
/// shard (`appenderInShard`).
fn start_appender(
    config: &BrokerConfig,
    parts: AppenderParts,
    count: usize,
) -> Result<(AppenderHandle, Vec<ShardPort>), BrokerError> {
    let owner: QueueOwnerFn =
        Arc::new(move |topic: &str, queue_id: i32| owner_shard(topic, queue_id, count));
    let in_shard = config.appender_runs_in_shard(count);
    tracing::info!(
        shards = count,
        appender_in_shard = in_shard,
        "starting the store"
    );
    if !in_shard {
        let placement = config
            .appender_core
            .map_or(Placement::Unbound, Placement::Fixed);
        return Ok(parts.start_appender(count, owner, placement)?);
    }
    if count != 1 {
        return Err(BrokerError::Config(format!(
            "appenderInShard needs exactly one shard (shardCount=1), not {count}"
        )));
    }
    let (appender, port) = parts.start_appender_in_shard(owner)?;
    Ok((appender, vec![port]))
}

/// Waits until every shard serves; on the first shard that could not
/// start, stops the others and answers its error.
fn await_ready(
    ready: &mpsc::Receiver<Result<(), ShardStartError>>,
    count: usize,
    stop: &AtomicBool,
) -> Option<BrokerError> {
    for _ in 0..count {
        match ready.recv() {
            Ok(Ok(())) => {}
            Ok(Err((shard, error))) => {
                stop.store(true, Ordering::SeqCst);
                let source = Box::new(error);
                return Some(BrokerError::ShardFailed { shard, source });
            }
            Err(_) => return Some(BrokerError::ShardEnded),
        }
    }
    None
}

/// The config files read before the shards start.
struct ConfigFiles {
    dir: ferrocket_store::ConfigDir,
    topics: TopicTable,
    loaded: LoadedState,
    offsets: OffsetFile,
}

impl ConfigFiles {
    fn load(store: &StoreHandle, config: &BrokerConfig) -> Result<Self, BrokerError> {
        let dir = store.config_dir()?;
        Ok(Self {
            topics: topics::load_table(&dir, config)?,
            loaded: load_state(&dir, config)?,
            offsets: dir
                .read_json::<OffsetFile>(OFFSETS_FILE)?
                .unwrap_or_default(),
            dir,
        })
    }

    fn into_env(
        self,
        (config, handles): (BrokerConfig, crate::BrokerHandles),
        role: RoleState,
        store: StoreHandle,
        listen: SocketAddr,
    ) -> Result<BrokerEnv, BrokerError> {
        let store_host = SocketAddr::new(config.advertised_ip()?, listen.port());
        let auth = crate::services::auth::open(&config, &self.dir)?;
        Ok(BrokerEnv {
            listen,
            store_host,
            broker_addr: store_host.to_string(),
            store,
            config_dir: self.dir,
            boot_ms: now_ms(),
            initial_topics: Versioned {
                version: 1,
                value: Arc::new(self.topics),
            },
            initial_offsets: Arc::new(self.offsets.offset_table),
            namesrvs: config.namesrv_addrs()?,
            in_memory_bytes: physical_memory_bytes().map_or(i64::MAX, |b| {
                b / 100 * i64::from(config.replication.access_message_in_memory_max_ratio)
            }),
            loaded: self.loaded,
            acl: open_acl(&config)?,
            auth,
            tls: ferrocket_tls::ServerTls::new(&config.tls, &[])
                .map_err(|e| BrokerError::Config(format!("TLS: {e}")))?,
            namesrv_tls: outbound_tls(&config)?,
            acting: crate::services::acting_master::ActingMaster::new(
                config.replication.enable_slave_acting_master,
                config.replication.broker_role.is_slave(),
                config.broker_id,
            ),
            lite: Default::default(),
            role,
            config,
            handles,
        })
    }
}

/// With `useTLS` (or `tls.enable`, or an enforcing mode): the client
/// configuration the broker's own calls dial with (name server
/// registration, and the controllers in controller mode).
pub fn outbound_tls(
    config: &BrokerConfig,
) -> Result<Option<Arc<ferrocket_tls::rustls::ClientConfig>>, BrokerError> {
    if !config.tls.client_uses_tls(config.use_tls) {
        return Ok(None);
    }
    let merged = config.tls.with_file();
    let built = merged.and_then(|merged| ferrocket_tls::client_config(&merged, &[]));
    built
        .map(Some)
        .map_err(|e| BrokerError::Config(format!("TLS (useTLS): {e}")))
}

/// With `aclEnable=true`: the ACL files under the RocketMQ home, loaded
/// (a missing home or a bad file stops the start, naming it).
fn open_acl(config: &BrokerConfig) -> Result<Option<Arc<ferrocket_acl::AclStore>>, BrokerError> {
    if !config.acl_enable {
        return Ok(None);
    }
    let home = config.rocketmq_home().ok_or_else(|| {
        BrokerError::Config(
            "aclEnable=true needs rocketmqHome (or $ROCKETMQ_HOME): the directory whose \
             conf/plain_acl.yml lists the accounts"
                .into(),
        )
    })?;
    let store = ferrocket_acl::AclStore::open(&home)
        .map_err(|e| BrokerError::Config(format!("ACL: {e}")))?;
    let accounts = store.current().accounts.len();
    tracing::info!(home = %home.display(), accounts, "ACL 1.0 enabled");
    Ok(Some(Arc::new(store)))
}

/// Why a shard could not start, and which.
type ShardStartError = (usize, BrokerError);

/// One shard's life: connect to the store and the mesh, listen, serve until
/// stopped, then stop its tasks, hand over what must be kept, stop the store.
async fn shard_main(ctx: ShardContext, input: ShardInput) {
    let ShardInput {
        port,
        fast,
        mesh,
        env,
        ready,
    } = input;
    let store = ShardStore::connect(port).await;
    let shard = Shard::new(ctx.index, ctx.count, env, store);
    match prepare(&shard, mesh, fast).await {
        Ok((listener, fast)) => {
            let _ = ready.send(Ok(()));
            serve_until_stopped(&shard, listener, fast, &ctx).await;
        }
        Err(error) => {
            tracing::error!(shard = ctx.index, %error, "shard could not start");
            let _ = ready.send(Err((ctx.index, error)));
            ctx.stop.store(true, Ordering::SeqCst);
            let poll = Duration::from_millis(STOP_POLL_INTERVAL_MS);
            flag_set(Arc::clone(&ctx.stop), poll).await;
        }
    }
    crate::tasks::stop(&shard).await;
    shard.store().shutdown().await;
    if let Some(mesh) = shard.mesh() {
        mesh.close();
    }
}

/// Connects the mesh, opens the shard's services and binds its listeners.
async fn prepare(
    shard: &Rc<Shard>,
    mesh: ShardEndpoints,
    fast: Option<SocketAddr>,
) -> Result<(TcpListener, Option<TcpListener>), BrokerError> {
    let handler: Rc<dyn MeshHandler<Box<dyn ErasedCall<Shard>>, AnyReply>> = shard.clone();
    // Held pulls forwarded to their owner count as in flight for up to their
    // suspend timeout, so allow well above the per-shard long-poll limit.
    let in_flight_max = shard
        .config()
        .long_poll_waiters_max
        .saturating_mul(2)
        .max(MESH_IN_FLIGHT_MAX_DEFAULT);
    shard.set_mesh(mesh.connect(handler, in_flight_max).await?);
    crate::tasks::start(shard)?;
    let addr = shard.env().listen;
    let listener = bind_listener(addr, true).map_err(|source| BrokerError::Bind {
        addr,
        source,
        port_key: "listenPort",
    })?;
    let fast = match fast {
        Some(addr) => Some(
            bind_listener(addr, true).map_err(|source| BrokerError::Bind {
                addr,
                source,
                port_key: "fastListenPortEnable",
            })?,
        ),
        None => None,
    };
    Ok((listener, fast))
}

/// Starts the serving-time loops and serves (on the fast port too, when
/// bound: the same requests, the same handler) until the stop flag is set.
async fn serve_until_stopped(
    shard: &Rc<Shard>,
    listener: TcpListener,
    fast: Option<TcpListener>,
    ctx: &ShardContext,
) {
    crate::tasks::start_serving(shard);
    crate::wire::local::start(shard);
    let stopped = {
        let shard = shard.clone();
        let flag = Arc::clone(&ctx.stop);
        async move {
            flag_set(flag, Duration::from_millis(STOP_POLL_INTERVAL_MS)).await;
            shard.stopping().trigger();
            shard.polls().close();
        }
    };
    let server = ServerConfig {
        shard_index: ctx.index as u16,
        limits: shard.config().server_limits,
        tls: shard.env().tls.clone(),
    };
    let main = serve(listener, shard.clone(), server.clone(), stopped);
    match fast {
        Some(fast) => {
            let poll = Duration::from_millis(STOP_POLL_INTERVAL_MS);
            let fast_stopped = flag_set(Arc::clone(&ctx.stop), poll);
            let fast = serve(fast, shard.clone(), server, fast_stopped);
            futures_lite::future::zip(main, fast).await;
        }
        None => main.await,
    }
}

/// Reads subscriptionGroup.json, messageRequestMode.json and
/// delayOffset.json and parses
/// `messageDelayLevel`; any problem stops the start.
fn load_state(
    dir: &ferrocket_store::ConfigDir,
    config: &BrokerConfig,
) -> Result<LoadedState, BrokerError> {
    let delay_levels = DelayLevels::parse(&config.message_delay_level)
        .map_err(|reason| BrokerError::Config(format!("messageDelayLevel: {reason}")))?;
    Ok(LoadedState {
        groups: Arc::new(crate::services::groups::load_table(dir)?),
        request_modes: Arc::new(crate::services::request_modes::load_table(dir)?),
        delay_offsets: crate::services::delay_levels::load_offsets(dir)?,
        delay_levels,
    })
}
