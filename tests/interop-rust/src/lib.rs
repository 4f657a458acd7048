//! Helpers for the `rocketmq-client-rust` interop tests: start a real
//! `ferrocket namesrv` and `ferrocket broker` (binary from `FERROCKET_BIN`,
//! else `target/debug/ferrocket` of the repository) on free 127.0.0.1
//! ports with a temporary store, and stop exactly those processes (by pid)
//! when dropped.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use rocketmq_client_rust::{ClientRuntime, ClientRuntimeConfig, TelemetryHandle};
use rocketmq_runtime::{RuntimeConfig, RuntimeOwner};

/// How long a server may take to say it is listening.
pub const READY_TIMEOUT_MS: u64 = 60_000;

/// The `ferrocket` binary under test.
pub fn ferrocket_bin() -> PathBuf {
    match std::env::var_os("FERROCKET_BIN") {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/ferrocket"),
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A running server process; SIGTERM then SIGKILL on drop.
pub struct Server {
    child: Child,
    pub port: u16,
    _store: Option<tempfile::TempDir>,
}

impl Server {
    fn start(args: &[String], port: u16, store: Option<tempfile::TempDir>) -> Server {
        let bin = ferrocket_bin();
        let mut child = Command::new(&bin)
            .args(args)
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("listening on") {
                    let _ = tx.send(());
                }
                eprintln!("[ferrocket:{port}] {line}");
            }
        });
        if rx
            .recv_timeout(Duration::from_millis(READY_TIMEOUT_MS))
            .is_err()
        {
            let _ = child.kill();
            panic!("ferrocket {args:?} did not start listening");
        }
        Server {
            child,
            port,
            _store: store,
        }
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGTERM to our own child by pid, then wait (SIGKILL if it hangs).
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A name server and one broker registered with it.
pub struct Cluster {
    pub broker: Server,
    pub namesrv: Server,
}

impl Cluster {
    /// Starts both; `settings` are broker `--set key=value` pairs.
    pub fn start(settings: &[&str]) -> Cluster {
        Cluster::start_with(&[], settings, ferrocket_client::ConnectionConfig::default())
    }

    /// Starts both with `--set` pairs for each; `probe` is how the
    /// registration wait talks to the name server (TLS, say).
    pub fn start_with(
        namesrv_settings: &[&str],
        settings: &[&str],
        probe: ferrocket_client::ConnectionConfig,
    ) -> Cluster {
        let port = free_port();
        let mut namesrv_args: Vec<String> =
            ["namesrv", "--listen-addr", "127.0.0.1", "--listen-port"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        namesrv_args.push(port.to_string());
        for setting in namesrv_settings {
            namesrv_args.extend(["--set".into(), setting.to_string()]);
        }
        let namesrv = Server::start(&namesrv_args, port, None);
        let store = tempfile::Builder::new()
            .prefix("ferrocket-interop-rust-")
            .tempdir()
            .expect("a temporary store");
        let port = free_port();
        let mut args: Vec<String> = [
            "broker",
            "--listen-addr",
            "127.0.0.1",
            "--broker-ip1",
            "127.0.0.1",
            "--mapped-file-size-commit-log",
            "67108864",
            "--register-interval-ms",
            "1000",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend([
            "--listen-port".into(),
            port.to_string(),
            "--namesrv-addr".into(),
            namesrv.addr(),
            "--store-path-root-dir".into(),
            store.path().display().to_string(),
        ]);
        for setting in settings {
            args.extend(["--set".into(), setting.to_string()]);
        }
        let broker = Server::start(&args, port, Some(store));
        wait_registered(&namesrv.addr(), &broker.addr(), probe);
        Cluster { broker, namesrv }
    }
}

/// Waits until the name server lists the broker, so a client's first route
/// lookup (TBW102 included) cannot race the broker's first registration.
/// Runs its own runtime on a thread: callers may be inside one already.
fn wait_registered(namesrv: &str, broker: &str, probe: ferrocket_client::ConnectionConfig) {
    let (namesrv, broker) = (namesrv.to_string(), broker.to_string());
    let listed = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let deadline = std::time::Instant::now() + Duration::from_millis(READY_TIMEOUT_MS);
            while std::time::Instant::now() < deadline {
                if let Ok(admin) = ferrocket_client::Admin::with_config(&namesrv, probe.clone()) {
                    if let Ok(brokers) = admin.cluster_brokers().await {
                        if brokers.iter().any(|b| b.addr == broker) {
                            return true;
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            false
        })
    })
    .join()
    .expect("the registration wait");
    assert!(listed, "the broker did not register with the name server");
}

static RUNTIME_OWNER: LazyLock<RuntimeOwner> = LazyLock::new(|| {
    RuntimeOwner::plan(RuntimeConfig {
        thread_name: "interop-rust-client".to_string(),
        ..Default::default()
    })
    .expect("runtime configuration")
    .build()
    .expect("client runtime owner")
});

/// A `rocketmq-client-rust` client runtime named `component`, on one
/// runtime owner shared by the tests of a binary.
pub fn client_runtime(component: &'static str) -> Arc<ClientRuntime> {
    ClientRuntime::try_new(
        RUNTIME_OWNER.root_context().component(component),
        ClientRuntimeConfig::default(),
        TelemetryHandle::noop(),
    )
    .expect("client runtime")
}
