//! Integration-test harness: starts real `ferrocket` processes on free
//! 127.0.0.1 ports with temporary data directories, waits until they say
//! they are listening, and stops exactly the processes it started (by pid:
//! SIGTERM, then SIGKILL after a grace period), in `Drop`, so nothing leaks
//! when a test fails.
//!
//! Every test file that uses it says `mod harness;`; not every file uses
//! every item, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod bad_input;
pub mod failover;
pub mod grpc;
pub mod namesrv_restart;
pub mod netns;
pub mod process;
pub mod remoting;
pub mod requests;
pub mod tier;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use process::{free_port, ServerProcess};
pub use remoting::RemotingConn;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;

/// How long a server may take to print its listening line (debug build,
/// 2 cores shared with other tests).
pub const READY_TIMEOUT_MS: u64 = 60_000;
/// How long a server may take to stop after SIGTERM before it gets SIGKILL.
pub const STOP_GRACE_MS: u64 = 10_000;
/// CommitLog segment size the harness gives brokers unless told otherwise:
/// small, so a test broker does not preallocate 1 GiB in /tmp.
pub const TEST_COMMIT_LOG_SEGMENT_BYTES: u64 = 64 * 1024 * 1024;
/// How many times a start is retried when the chosen port was taken by
/// someone else between picking it and the child binding it.
pub const PORT_RETRIES_MAX: usize = 3;

pub fn ready_timeout() -> Duration {
    Duration::from_millis(READY_TIMEOUT_MS)
}

/// The `ferrocket` binary cargo built for these tests.
pub fn ferrocket_bin() -> &'static str {
    env!("CARGO_BIN_EXE_ferrocket")
}

/// Runs `ferrocket admin -n NAMESRV ARGS`.
pub fn admin(namesrv: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(ferrocket_bin())
        .args(["admin", "-n", namesrv])
        .args(args)
        .output()
        .unwrap()
}

/// What `ferrocket admin -n NAMESRV ARGS` printed; panics unless it succeeded.
pub fn admin_ok(namesrv: &str, args: &[&str]) -> String {
    succeeded(admin(namesrv, args))
}

/// A command's standard output; panics, showing both outputs, unless it
/// succeeded.
pub fn succeeded(output: std::process::Output) -> String {
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    text
}

/// A running `ferrocket namesrv`.
pub struct Namesrv {
    pub process: ServerProcess,
    home: tempfile::TempDir,
}

/// Options for [`Namesrv::start_with`].
#[derive(Debug, Clone, Default)]
pub struct NamesrvOpts {
    pub broker_expiry_ms: Option<u64>,
    pub extra_args: Vec<String>,
}

impl Namesrv {
    /// Starts a name server with default settings.
    pub fn start() -> Self {
        Self::start_with(NamesrvOpts::default())
    }

    pub fn start_with(opts: NamesrvOpts) -> Self {
        let home = tempfile::Builder::new()
            .prefix("ferrocket-namesrv-")
            .tempdir()
            .unwrap();
        let process = start_with_port_retries("namesrv", |port| {
            (namesrv_args(port, &opts), home.path().to_path_buf())
        });
        Self { process, home }
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> String {
        self.process.addr().to_string()
    }

    pub fn connect(&self) -> RemotingConn {
        RemotingConn::connect(self.addr()).unwrap()
    }
}

/// The command line of a test name server on `port`.
pub fn namesrv_args(port: u16, opts: &NamesrvOpts) -> Vec<String> {
    let mut args = vec![
        "namesrv".to_string(),
        "--listen-addr".into(),
        "127.0.0.1".into(),
        "--listen-port".into(),
        port.to_string(),
    ];
    if let Some(ms) = opts.broker_expiry_ms {
        args.extend(["--broker-expiry-ms".into(), ms.to_string()]);
    }
    args.extend(opts.extra_args.iter().cloned());
    args
}

/// Options for [`Broker::start`]. `None` leaves the server's default, except
/// where noted.
#[derive(Debug, Clone, Default)]
pub struct BrokerOpts {
    pub broker_name: Option<String>,
    pub cluster_name: Option<String>,
    pub shards: Option<usize>,
    /// `ASYNC_FLUSH` or `SYNC_FLUSH`.
    pub flush_disk_type: Option<String>,
    pub auto_create_topic: Option<bool>,
    /// Defaults to [`TEST_COMMIT_LOG_SEGMENT_BYTES`].
    pub commit_log_segment_bytes: Option<u64>,
    pub register_interval_ms: Option<u64>,
    /// Reuse this store directory (for restart tests); the caller owns it.
    /// When `None` the broker gets its own temporary directory.
    pub store_dir: Option<PathBuf>,
    pub extra_args: Vec<String>,
}

/// A running `ferrocket broker`.
pub struct Broker {
    pub process: ServerProcess,
    store_dir: PathBuf,
    // Declared after `process`, so the directory outlives the process.
    owned_store: Option<tempfile::TempDir>,
    opts: BrokerOpts,
    namesrv_addr: String,
}

impl Broker {
    /// Starts a broker registering with `namesrv_addr` (`h:p` or `h:p;h:p`).
    pub fn start(namesrv_addr: &str, opts: BrokerOpts) -> Self {
        let owned_store = match opts.store_dir {
            Some(_) => None,
            None => Some(
                tempfile::Builder::new()
                    .prefix("ferrocket-broker-")
                    .tempdir()
                    .unwrap(),
            ),
        };
        let store_dir = match (&opts.store_dir, &owned_store) {
            (Some(dir), _) => dir.clone(),
            (None, Some(tmp)) => tmp.path().to_path_buf(),
            (None, None) => unreachable!("a store directory is always chosen"),
        };
        std::fs::create_dir_all(&store_dir).unwrap();
        let process = start_with_port_retries("broker", |port| {
            (
                broker_args(namesrv_addr, &opts, &store_dir, port),
                store_dir.clone(),
            )
        });
        let broker = Self {
            process,
            store_dir,
            owned_store,
            opts,
            namesrv_addr: namesrv_addr.to_string(),
        };
        broker.wait_registered();
        broker
    }

    /// Waits until every name server lists this broker in its cluster info,
    /// so a test's first route lookup (TBW102 included) cannot race the
    /// broker's first registration. Panics with the broker's output when
    /// registration does not show up within [`READY_TIMEOUT_MS`].
    fn wait_registered(&self) {
        let addr = self.addr();
        for namesrv in self.namesrv_addr.split(';').filter(|a| !a.is_empty()) {
            let listed = wait_for(ready_timeout(), || {
                let mut conn = RemotingConn::connect(namesrv).ok()?;
                let info = conn.request(RemotingCommand::request(
                    request_code::GET_BROKER_CLUSTER_INFO,
                ));
                let body = String::from_utf8_lossy(&info.body).into_owned();
                (info.code == response_code::SUCCESS && body.contains(&addr)).then_some(())
            });
            assert!(
                listed.is_some(),
                "broker {addr} did not register with {namesrv}; its output:\n{}",
                self.process.output()
            );
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> String {
        self.process.addr().to_string()
    }

    pub fn store_dir(&self) -> &Path {
        &self.store_dir
    }

    pub fn connect(&self) -> RemotingConn {
        RemotingConn::connect(self.addr()).unwrap()
    }

    /// Stops the broker (SIGTERM) and starts it again on the same store
    /// directory and port. Panics when it does not exit cleanly.
    pub fn restart(&mut self) {
        let status = self.process.stop();
        assert!(
            status.success(),
            "broker exited with {status} on SIGTERM; its output:\n{}",
            self.process.output()
        );
        self.start_again();
    }

    /// Kills the broker with SIGKILL (a crash) and starts it again on the
    /// same store directory and port.
    pub fn crash_and_restart(&mut self) {
        self.process.kill();
        self.start_again();
    }

    /// Adds `key=value` settings for the next start (a key set twice takes
    /// the later value), as `restart` then gives them.
    pub fn set_on_restart(&mut self, settings: &[&str]) {
        for kv in settings {
            self.opts.extra_args.push("--set".to_string());
            self.opts.extra_args.push(kv.to_string());
        }
    }

    /// Starts the broker again after it was stopped or killed (for example
    /// after the test edited its store directory).
    pub fn start_again(&mut self) {
        let port = self.process.port();
        let args = broker_args(&self.namesrv_addr, &self.opts, &self.store_dir, port);
        self.process = ServerProcess::start("broker", &args, &self.store_dir, port)
            .unwrap_or_else(|e| panic!("{e}"));
        self.wait_registered();
    }
}

pub fn broker_args(
    namesrv_addr: &str,
    opts: &BrokerOpts,
    store_dir: &Path,
    port: u16,
) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "broker".into(),
        "--listen-addr".into(),
        "127.0.0.1".into(),
        "--listen-port".into(),
        port.to_string(),
        "--broker-ip1".into(),
        "127.0.0.1".into(),
        "--namesrv-addr".into(),
        namesrv_addr.into(),
        "--store-path-root-dir".into(),
        store_dir.display().to_string(),
        "--mapped-file-size-commit-log".into(),
        opts.commit_log_segment_bytes
            .unwrap_or(TEST_COMMIT_LOG_SEGMENT_BYTES)
            .to_string(),
        // A test's data must not depend on how full the host's disk is: at
        // Java's default 85% a broker deletes unexpired segments.
        "--set".into(),
        "diskSpaceCleanForciblyRatio=100".into(),
    ];
    // The HA listener's port is the test's choice too (not listenPort + 1).
    if !opts
        .extra_args
        .iter()
        .any(|a| a.starts_with("haListenPort="))
    {
        // Never the broker's own port: the OS may hand the same free port
        // out twice in a row.
        let ha_port = std::iter::repeat_with(free_port)
            .find(|ha| *ha != port)
            .expect("free ports never run out");
        args.extend(["--set".into(), format!("haListenPort={ha_port}")]);
    }
    let mut flag = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            args.push(name.to_string());
            args.push(value);
        }
    };
    flag("--broker-name", opts.broker_name.clone());
    flag("--broker-cluster-name", opts.cluster_name.clone());
    flag("--shards", opts.shards.map(|n| n.to_string()));
    flag("--flush-disk-type", opts.flush_disk_type.clone());
    flag(
        "--auto-create-topic-enable",
        opts.auto_create_topic.map(|b| b.to_string()),
    );
    flag(
        "--register-interval-ms",
        opts.register_interval_ms.map(|n| n.to_string()),
    );
    args.extend(opts.extra_args.iter().cloned());
    args
}

/// Picks a free port and starts `role`, picking again when the port was
/// taken before the child could bind it.
fn start_with_port_retries(
    role: &'static str,
    mut args_for_port: impl FnMut(u16) -> (Vec<String>, PathBuf),
) -> ServerProcess {
    let mut last_error = String::new();
    for _ in 0..PORT_RETRIES_MAX {
        let port = free_port();
        let (args, home) = args_for_port(port);
        match ServerProcess::start(role, &args, &home, port) {
            Ok(process) => return process,
            Err(error)
                if error.contains("Address already in use")
                    || error.contains("os error 98")
                    || error.contains("is in use by pid") =>
            {
                last_error = error;
            }
            Err(error) => panic!("{error}"),
        }
    }
    panic!("{role} could not bind a free port in {PORT_RETRIES_MAX} tries:\n{last_error}");
}

/// Polls `condition` every 100 ms until it returns `Some` or `timeout`
/// passes.
pub fn wait_for<T>(timeout: Duration, mut condition: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(value) = condition() {
            return Some(value);
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A topic name no other test uses.
pub fn unique_name(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{prefix}_{}_{}_{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}
