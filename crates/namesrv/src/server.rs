//! Starting and stopping the name server: one glommio executor runs the
//! Remoting server and the periodic broker-expiry scan.

use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrocket_runtime::server::{bind_listener, bind_waiting, flag_set, serve, ServerConfig};
use glommio::{ExecutorJoinHandle, LocalExecutorBuilder};

use crate::processor::NamesrvHandler;
use crate::{NamesrvConfig, NamesrvError};

/// How long [`start`] waits for the listener to be bound.
pub const START_TIMEOUT_MS: u64 = 30_000;

/// Runs the name server on the calling thread until `stop` is true, then
/// stops gracefully. Prints `ferrocket namesrv listening on ADDR` to stderr
/// once it accepts connections.
pub fn run(config: NamesrvConfig, stop: Arc<AtomicBool>) -> Result<(), NamesrvError> {
    validate(&config)?;
    let executor = LocalExecutorBuilder::default()
        .name("namesrv")
        .make()
        .map_err(|e| NamesrvError::Executor(e.to_string()))?;
    executor.run(serve_namesrv(config, stop, |_| {}))
}

/// A name server running on its own thread (tests, `ferrocket start`).
pub struct NamesrvHandle {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<ExecutorJoinHandle<Result<(), NamesrvError>>>,
}

impl NamesrvHandle {
    /// The bound address (the real port when the config asked for 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the server and waits for it to finish.
    pub fn stop(mut self) -> Result<(), NamesrvError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), NamesrvError> {
        self.stop.store(true, Ordering::Release);
        match self.thread.take() {
            Some(thread) => thread.join().map_err(|_| NamesrvError::Panicked)?,
            None => Ok(()),
        }
    }
}

impl Drop for NamesrvHandle {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// Starts a name server on a new thread and returns once it is listening.
pub fn start(config: NamesrvConfig) -> Result<NamesrvHandle, NamesrvError> {
    validate(&config)?;
    let stop = Arc::new(AtomicBool::new(false));
    let (bound_tx, bound_rx) = mpsc::channel();
    let thread_stop = stop.clone();
    let thread = LocalExecutorBuilder::default()
        .name("namesrv")
        .spawn(move || async move {
            serve_namesrv(config, thread_stop, move |addr| {
                let _ = bound_tx.send(addr);
            })
            .await
        })
        .map_err(|e| NamesrvError::Executor(e.to_string()))?;
    match bound_rx.recv_timeout(Duration::from_millis(START_TIMEOUT_MS)) {
        Ok(addr) => Ok(NamesrvHandle {
            addr,
            stop,
            thread: Some(thread),
        }),
        Err(mpsc::RecvTimeoutError::Disconnected) => match thread.join() {
            Ok(Err(e)) => Err(e),
            Ok(Ok(())) => Err(NamesrvError::Executor("stopped before listening".into())),
            Err(_) => Err(NamesrvError::Panicked),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            stop.store(true, Ordering::Release);
            Err(NamesrvError::Executor(format!(
                "not listening after {START_TIMEOUT_MS} ms"
            )))
        }
    }
}

fn validate(config: &NamesrvConfig) -> Result<(), NamesrvError> {
    if config.scan_interval_ms == 0 || config.stop_poll_interval_ms == 0 {
        return Err(NamesrvError::Config(
            "scan_interval_ms and stop_poll_interval_ms must be positive".into(),
        ));
    }
    if config.broker_expiry_ms == 0 {
        return Err(NamesrvError::Config(
            "broker_expiry_ms must be positive".into(),
        ));
    }
    Ok(())
}

async fn serve_namesrv(
    config: NamesrvConfig,
    stop: Arc<AtomicBool>,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<(), NamesrvError> {
    // Load the KV config and TLS first: a bad file stops the start before
    // we listen.
    let handler = Rc::new(NamesrvHandler::new(&config)?);
    let tls = ferrocket_tls::ServerTls::new(&config.tls, &[])
        .map_err(|e| NamesrvError::Config(format!("TLS: {e}")))?;
    let tls_reloader = match &tls {
        Some(tls) => Some(tls.watch(stop.clone()).map_err(|e| {
            NamesrvError::Config(format!("cannot start the TLS reload thread: {e}"))
        })?),
        None => None,
    };
    let addr = config.listen_socket_addr();
    // Blocking while the port is busy is fine: nothing else runs here yet.
    let listener = bind_waiting(addr, || bind_listener(addr, false))
        .map_err(|source| NamesrvError::Bind { addr, source })?;
    let bound = listener.local_addr().map_err(|e| NamesrvError::Bind {
        addr,
        source: io::Error::other(e.to_string()),
    })?;
    let scan_interval = Duration::from_millis(config.scan_interval_ms);
    let scanner = glommio::spawn_local({
        let handler = handler.clone();
        async move {
            loop {
                glommio::timer::sleep(scan_interval).await;
                handler.expire_brokers(Instant::now());
            }
        }
    });
    let acl_reloader = handler.acl.clone().map(|acl| {
        let interval = Duration::from_millis(ferrocket_acl::RELOAD_INTERVAL_MS);
        glommio::spawn_local(async move {
            loop {
                glommio::timer::sleep(interval).await;
                crate::acl::reload(&acl);
            }
        })
    });
    let metrics = crate::metrics::bind(&config)?.map(|listener| {
        let (handler, config) = (handler.clone(), config.clone());
        glommio::spawn_local(async move {
            crate::metrics::serve(listener, handler, &config, bound).await
        })
    });
    ferrocket_runtime::server::announce_listening("namesrv", bound);
    tracing::info!(%bound, "name server listening");
    on_bound(bound);
    let server_config = ServerConfig {
        shard_index: 0,
        limits: config.limits,
        tls: tls.clone(),
    };
    let stop_poll = Duration::from_millis(config.stop_poll_interval_ms);
    serve(listener, handler, server_config, flag_set(stop, stop_poll)).await;
    drop(scanner);
    drop(acl_reloader);
    drop(metrics);
    drop(tls_reloader);
    tracing::info!(%bound, "name server stopped");
    Ok(())
}
