//! Starting and stopping a broker: open the store (recovery), start the
//! CommitLog appender and one shard per configured core, serve until the
//! stop flag is set, then stop in order (serving, offsets, store).

use std::net::SocketAddr;
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
use ferrocket_store::{MessageStore, Placement, QueueOwnerFn, ShardPort, ShardStore};
use socket2::{Domain, Protocol, Socket, Type};

use crate::clock::now_ms;
use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::services::delay_levels::DelayLevels;
use crate::services::offsets::{OffsetFile, OFFSETS_FILE};
use crate::services::topics;
use crate::shard::{BrokerEnv, LoadedState, Shard};
use crate::tasks::control_plane;
use crate::tasks::namesrv_register;

/// Share of physical memory within which a message counts as in memory
/// (`accessMessageInMemoryMaxRatio`, percent).
pub const IN_MEMORY_PERCENT: i64 = 40;

/// What moves into each shard's executor.
struct ShardInput {
    port: ShardPort,
    mesh: MeshEndpoints<Box<dyn ErasedCall<Shard>>, AnyReply>,
    env: Arc<BrokerEnv>,
    ready: mpsc::Sender<Result<(), String>>,
}

/// Binds `addr` to learn that it is free (and the port, when 0 was asked),
/// then holds it with a bound, non-listening SO_REUSEPORT socket until
/// every shard has its own listener on it.
fn reserve_port(addr: SocketAddr) -> Result<(SocketAddr, Socket), BrokerError> {
    let bind_err = |source| BrokerError::Bind { addr, source };
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

/// Runs a broker until `stop` is set; blocking. Prints
/// `ferrocket broker listening on {addr}` to stderr once every shard serves.
pub fn run(config: BrokerConfig, stop: Arc<AtomicBool>) -> Result<(), BrokerError> {
    config.validate()?;
    // Before anything in the store is read or written: one broker per store.
    let _store_lock = ProcessLock::acquire_dir(&config.store_path_root_dir)?;
    let plan = config.shards_config().plan()?;
    let count = plan.shard_count();
    let (listen, holder) = reserve_port(SocketAddr::new(config.listen_addr, config.listen_port))?;
    let store_host = SocketAddr::new(config.advertised_ip()?, listen.port());
    if config.namesrv_addr.trim().is_empty() {
        tracing::warn!(
            "namesrvAddr is not set: this broker registers with no name server, so no client \
             can find it; set namesrvAddr=HOST:9876 in the config or pass --namesrv-addr"
        );
    }
    let (store, parts) = MessageStore::open(config.store_config())?;
    let config_dir = store.config_dir()?;
    let topic_table = topics::load_table(&config_dir, &config)?;
    let loaded = load_state(&config_dir, &config)?;
    let offsets = config_dir
        .read_json::<OffsetFile>(OFFSETS_FILE)?
        .unwrap_or_default();
    let owner: QueueOwnerFn =
        Arc::new(move |topic: &str, queue_id: i32| owner_shard(topic, queue_id, count));
    let in_shard = config.appender_runs_in_shard(count);
    tracing::info!(
        shards = count,
        appender_in_shard = in_shard,
        "starting the store"
    );
    let (appender, ports) = if in_shard {
        if count != 1 {
            return Err(BrokerError::Config(format!(
                "appenderInShard needs exactly one shard (shardCount=1), not {count}"
            )));
        }
        let (appender, port) = parts.start_appender_in_shard(owner)?;
        (appender, vec![port])
    } else {
        let placement = config
            .appender_core
            .map_or(Placement::Unbound, Placement::Fixed);
        parts.start_appender(count, owner, placement)?
    };
    let env = Arc::new(BrokerEnv {
        listen,
        store_host,
        broker_addr: store_host.to_string(),
        store,
        config_dir,
        boot_ms: now_ms(),
        initial_topics: Versioned {
            version: 1,
            value: Arc::new(topic_table),
        },
        initial_offsets: Arc::new(offsets.offset_table),
        namesrvs: config.namesrv_addrs()?,
        in_memory_bytes: physical_memory_bytes().map_or(i64::MAX, |b| b / 100 * IN_MEMORY_PERCENT),
        loaded,
        config,
    });
    let (ready_tx, ready_rx) = mpsc::channel();
    let inputs: Vec<ShardInput> = ports
        .into_iter()
        .zip(mesh_endpoints(count, MESH_RING_CAPACITY_DEFAULT))
        .map(|(port, mesh)| ShardInput {
            port,
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
    let mut ready = 0;
    let mut start_error = None;
    while ready < count {
        match ready_rx.recv() {
            Ok(Ok(())) => ready += 1,
            Ok(Err(reason)) => {
                stop.store(true, Ordering::SeqCst);
                start_error.get_or_insert(reason);
                break;
            }
            Err(_) => break,
        }
    }
    if ready == count {
        ferrocket_runtime::server::announce_listening("broker", listen);
        tracing::info!(%listen, shards = count, broker = %env.broker_addr, "broker serving");
    }
    drop(holder);
    let mut failure = start_error.map(|reason| BrokerError::ShardFailed { shard: 0, reason });
    for (shard, result) in shards.join().into_iter().enumerate() {
        let error = match result {
            Ok(Ok(())) => continue,
            Ok(Err(reason)) => BrokerError::ShardFailed { shard, reason },
            Err(err) => BrokerError::from(err),
        };
        tracing::error!(shard, %error, "shard failed");
        failure.get_or_insert(error);
    }
    let stored = appender.join();
    if let Some(error) = failure {
        return Err(error);
    }
    stored?;
    tracing::info!("broker stopped");
    Ok(())
}

/// One shard's life: connect to the store and the mesh, listen, serve until
/// stopped, then hand over offsets and stop the store.
async fn shard_main(ctx: ShardContext, input: ShardInput) -> Result<(), String> {
    let ShardInput {
        port,
        mesh,
        env,
        ready,
    } = input;
    let index = ctx.index;
    let store = ShardStore::connect(port).await;
    let shard = Shard::new(index, ctx.count, Arc::clone(&env), store);
    let handler: std::rc::Rc<dyn MeshHandler<Box<dyn ErasedCall<Shard>>, AnyReply>> = shard.clone();
    let mut failure = None;
    // Held pulls forwarded to their owner count as in flight for up to their
    // suspend timeout, so allow well above the per-shard long-poll limit.
    let in_flight_max = env
        .config
        .long_poll_waiters_max
        .saturating_mul(2)
        .max(MESH_IN_FLIGHT_MAX_DEFAULT);
    match mesh.connect(handler, in_flight_max).await {
        Ok(mesh) => shard.set_mesh(mesh),
        Err(err) => failure = Some(format!("cross-shard mesh: {err}")),
    }
    if failure.is_none() {
        if let Err(reason) = crate::tasks::placed::start(&shard) {
            failure = Some(reason);
        }
    }
    let listener = match failure {
        Some(_) => None,
        None => match bind_listener(env.listen, true) {
            Ok(listener) => Some(listener),
            Err(err) => {
                failure = Some(format!("cannot listen on {}: {err}", env.listen));
                None
            }
        },
    };
    let poll = Duration::from_millis(STOP_POLL_INTERVAL_MS);
    match listener {
        Some(listener) => {
            let _ = ready.send(Ok(()));
            if index == 0 {
                glommio::spawn_local(namesrv_register::registration_loop(shard.clone())).detach();
                glommio::spawn_local(control_plane::offset_persist_loop(shard.clone())).detach();
                glommio::spawn_local(control_plane::client_expiry_loop(shard.clone())).detach();
            }
            crate::tasks::schedule::spawn(&shard);
            let stopped = {
                let shard = shard.clone();
                let flag = Arc::clone(&ctx.stop);
                async move {
                    flag_set(flag, poll).await;
                    shard.stopping.trigger();
                    shard.polls.close();
                }
            };
            let server = ServerConfig {
                shard_index: index as u16,
                limits: shard.config().server_limits,
            };
            serve(listener, shard.clone(), server, stopped).await;
        }
        None => {
            let reason = failure.clone().unwrap_or_default();
            let _ = ready.send(Err(reason));
            ctx.stop.store(true, Ordering::SeqCst);
            flag_set(Arc::clone(&ctx.stop), poll).await;
        }
    }
    shard.stopping.trigger();
    shard.polls.close();
    crate::tasks::schedule::stop(&shard).await;
    let (own, _) = shard.offsets.borrow_mut().snapshot();
    if index == 0 {
        control_plane::final_persist(&shard, own).await;
        namesrv_register::unregister_all(&shard).await;
    } else if let Err(reject) = shard
        .call(
            0,
            control_plane::ShardStopped {
                shard: index,
                offsets: own,
            },
        )
        .await
        .and_then(|done| done)
    {
        tracing::warn!(shard = index, remark = %reject.remark, "could not hand offsets to shard 0");
    }
    crate::tasks::placed::stop(&shard).await;
    shard.store.shutdown().await;
    if let Some(mesh) = shard.mesh() {
        mesh.close();
    }
    match failure {
        Some(reason) => Err(reason),
        None => Ok(()),
    }
}

/// Reads subscriptionGroup.json and delayOffset.json and parses
/// `messageDelayLevel`; any problem stops the start.
fn load_state(
    dir: &ferrocket_store::ConfigDir,
    config: &BrokerConfig,
) -> Result<LoadedState, BrokerError> {
    let delay_levels = DelayLevels::parse(&config.message_delay_level)
        .map_err(|reason| BrokerError::Config(format!("messageDelayLevel: {reason}")))?;
    Ok(LoadedState {
        groups: Arc::new(crate::services::groups::load_table(dir)?),
        delay_offsets: crate::services::delay_levels::load_offsets(dir)?,
        delay_levels,
    })
}
