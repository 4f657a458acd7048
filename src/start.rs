//! `ferrocket start`: a local development pair, one name server and one
//! broker, as two child processes of this one. Ctrl-C or SIGTERM stops
//! both; if either child exits, the other is stopped too.

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a child gets between SIGTERM and SIGKILL.
const CHILD_STOP_GRACE_MS: u64 = 10_000;
const POLL_INTERVAL_MS: u64 = 100;

#[derive(Debug, clap::Args)]
pub struct StartArgs {
    /// Directory for the broker's store (created if missing).
    #[arg(long, default_value = "./data")]
    pub data_dir: PathBuf,
    /// Address both servers listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub listen_addr: String,
    /// The name server's port (clients' `namesrvAddr`).
    #[arg(long, default_value_t = 9876)]
    pub namesrv_port: u16,
    /// The broker's port; its HA (replication) port is the next one.
    #[arg(long, default_value_t = 10911)]
    pub broker_port: u16,
    /// A broker properties file (`key=value` lines, as `broker -c`); this
    /// command's own flags and `--broker-set` win over it.
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub broker_config: Option<PathBuf>,
    /// Extra `key=value` broker settings (RocketMQ names), repeatable.
    #[arg(long = "broker-set", value_name = "KEY=VALUE")]
    pub broker_settings: Vec<String>,
}

struct Supervised {
    name: &'static str,
    child: Child,
}

impl Supervised {
    fn spawn(name: &'static str, args: &[String]) -> Result<Self, String> {
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
        let mut command = Command::new(exe);
        command.args(args);
        // A process group of their own: Ctrl-C in a terminal reaches only
        // this supervisor, which stops the broker before the name server
        // (so the broker can unregister) instead of both at once.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        // Children die with us even if we are killed with SIGKILL.
        #[cfg(target_os = "linux")]
        unsafe {
            use std::os::unix::process::CommandExt;
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        tracing::info!(pid = child.id(), "started {name}");
        Ok(Self { name, child })
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGTERM, then SIGKILL after the grace period; waits for the exit.
    fn stop(&mut self) {
        if self.exited().is_some() {
            return;
        }
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_millis(CHILD_STOP_GRACE_MS);
        while Instant::now() < deadline {
            if self.exited().is_some() {
                tracing::info!("{} stopped", self.name);
                return;
            }
            std::thread::sleep(Duration::from_millis(POLL_INTERVAL_MS));
        }
        tracing::warn!(
            "{} did not stop within {CHILD_STOP_GRACE_MS} ms; killing it",
            self.name
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Refuses at once a port another live process listens on, with the flag
/// that changes it (a port nobody holds any more is left to the servers,
/// which wait for a killed server's socket to go).
fn check_ports(args: &StartArgs) -> Result<(), String> {
    let ha_set = args.broker_settings.iter().find_map(|s| {
        let (key, value) = s.split_once('=')?;
        (key.trim() == "haListenPort").then(|| value.trim().parse::<u16>().ok())?
    });
    let ha_default = args.broker_port.checked_add(1).unwrap_or(args.broker_port);
    let ha_port = ha_set.filter(|p| *p > 0).unwrap_or(ha_default);
    let ports = [
        (
            args.namesrv_port,
            "the name server's",
            "--namesrv-port PORT",
        ),
        (args.broker_port, "the broker's", "--broker-port PORT"),
        (
            ha_port,
            "the broker's HA port (broker port + 1)",
            "--broker-port PORT or --broker-set haListenPort=PORT",
        ),
    ];
    for (n, (port, whose, flag)) in ports.iter().enumerate() {
        if let Some((_, other, _)) = ports[..n].iter().find(|(p, _, _)| p == port) {
            return Err(format!(
                "the same port {port} for {other} and {whose}: pass {flag} with another port"
            ));
        }
    }
    for (port, whose, flag) in ports {
        if let Some(holder) = ferrocket_runtime::server::port_holder(port) {
            return Err(format!(
                "port {port}, {whose}, is in use by {holder}: stop it, or pass {flag}"
            ));
        }
    }
    Ok(())
}

/// Most directory entries looked at to size the data directory.
const DATA_DIR_ENTRIES_MAX: usize = 100_000;

/// The value of a broker key as `start` hands it to its broker: the last
/// `--broker-set`, else the `-c` file's, else none (the broker's default).
/// A file that does not load is left to the broker, which names the error.
fn broker_setting(args: &StartArgs, key: &str) -> Option<String> {
    let set = args.broker_settings.iter().rev().find_map(|s| {
        let (k, value) = s.split_once('=')?;
        (k.trim() == key).then(|| value.trim().to_string())
    });
    set.or_else(|| {
        let file = crate::properties::load(args.broker_config.as_ref()?).ok()?;
        file.get(key).map(|setting| setting.value.clone())
    })
}

/// `start` is for a laptop: says where the data goes, how much is there,
/// what the CommitLog allocates (whole segments, 1 GiB by default, before
/// the first message) and that it stays until deleted or expired.
fn say_what_the_store_takes(args: &StartArgs) {
    let dir = &args.data_dir;
    let mib = 1024 * 1024;
    let megabytes = dir_bytes(dir, DATA_DIR_ENTRIES_MAX) / mib;
    let number = |key: &str, default: u64| {
        broker_setting(args, key)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(default)
    };
    let segment = number(
        "mappedFileSizeCommitLog",
        ferrocket_store::SEGMENT_BYTES_DEFAULT,
    );
    let segment_mib = segment.div_ceil(mib);
    let hours = number("fileReservedTime", 72);
    let forcibly = number("diskSpaceCleanForciblyRatio", 85);
    tracing::info!(
        "data under {} ({megabytes} MiB now): the CommitLog allocates each {segment_mib} MiB \
         segment whole (mappedFileSizeCommitLog), the first as the broker starts and the next \
         once one is half written, and keeps every message at least fileReservedTime ({hours} h) \
         unless the disk is {forcibly}% full (diskSpaceCleanForciblyRatio): a 10 s `ferrocket-bench \
         produce` can leave gigabytes; delete the directory to reclaim the space, or start with \
         --broker-set mappedFileSizeCommitLog=BYTES for smaller segments",
        dir.display()
    );
}

/// Bytes of the regular files under `dir`, looking at most `limit` entries.
fn dir_bytes(dir: &std::path::Path, limit: usize) -> u64 {
    let mut pending = vec![dir.to_path_buf()];
    let (mut bytes, mut seen) = (0u64, 0usize);
    while let Some(next) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > limit {
                return bytes;
            }
            match entry.metadata() {
                Ok(meta) if meta.is_dir() => pending.push(entry.path()),
                Ok(meta) => bytes += std::os::unix::fs::MetadataExt::blocks(&meta) * 512,
                Err(_) => {}
            }
        }
    }
    bytes
}

pub fn run(args: StartArgs, stop: Arc<AtomicBool>) -> Result<(), String> {
    check_ports(&args)?;
    // Before either server starts: a path that is a file, or a directory
    // this user may not write, is said once, in words.
    ferrocket_runtime::lock::prepare_data_dir(&args.data_dir).map_err(|e| e.to_string())?;
    say_what_the_store_takes(&args);
    let namesrv_addr = format!("{}:{}", args.listen_addr, args.namesrv_port);
    let namesrv_args = vec![
        "namesrv".to_string(),
        "--listen-addr".into(),
        args.listen_addr.clone(),
        "--listen-port".into(),
        args.namesrv_port.to_string(),
        "--set".into(),
        format!(
            "kvConfigPath={}",
            ferrocket_namesrv::kv_config_path_under(&args.data_dir).display()
        ),
    ];
    let mut broker_args = vec![
        "broker".to_string(),
        "--listen-addr".into(),
        args.listen_addr.clone(),
        "--listen-port".into(),
        args.broker_port.to_string(),
        "--namesrv-addr".into(),
        namesrv_addr,
        "--store-path-root-dir".into(),
        args.data_dir.join("broker").display().to_string(),
        // RocketMQ 5 (gRPC) clients reach the same port.
        "--set".into(),
        "enableProxy=true".into(),
    ];
    if let Some(file) = &args.broker_config {
        broker_args.push("--config".into());
        broker_args.push(file.display().to_string());
    }
    for setting in &args.broker_settings {
        broker_args.push("--set".into());
        broker_args.push(setting.clone());
    }
    let mut children = vec![Supervised::spawn("namesrv", &namesrv_args)?];
    match Supervised::spawn("broker", &broker_args) {
        Ok(broker) => children.push(broker),
        Err(e) => {
            children[0].stop();
            return Err(e);
        }
    }
    let mut failure = None;
    while !stop.load(Ordering::Relaxed) {
        if let Some(child) = children
            .iter_mut()
            .find_map(|c| c.exited().map(|s| (c.name, s)))
        {
            failure = Some(format!("{} exited unexpectedly ({})", child.0, child.1));
            break;
        }
        std::thread::sleep(Duration::from_millis(POLL_INTERVAL_MS));
    }
    // Broker first, so it can unregister from the running name server.
    for child in children.iter_mut().rev() {
        child.stop();
    }
    failure.map_or(Ok(()), Err)
}
