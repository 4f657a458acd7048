//! `ferrocket tune check`: reads what matters for Ferrocket on this host
//! (cores and NUMA, isolated CPUs, io_uring, locked-memory limit, the data
//! directory's disk and filesystem, THP, dirty-page and swap settings) and
//! prints one finding per item with a concrete recommendation. It only
//! reads: /proc, /sys, getrlimit, statfs, and one io_uring_setup probe whose
//! ring is closed at once. Always exits 0; the findings are advice.

use std::path::{Path, PathBuf};

use serde_json::json;

mod disk;
use disk::{check_disk, check_filesystem, existing_ancestor};
#[cfg(test)]
use disk::{dev_major_minor, fs_type_name, mount_of};

/// Memory glommio registers with io_uring per executor (its default
/// `io_memory`, 10 MiB) plus the three rings; counted against RLIMIT_MEMLOCK.
pub const MEMLOCK_BYTES_PER_EXECUTOR: u64 = 11 << 20;
/// Executors besides the shards: the CommitLog appender, plus one spare.
pub const EXECUTORS_EXTRA: u64 = 2;
/// Entries of the probe ring.
const PROBE_RING_ENTRIES: u32 = 4;
/// `vm.swappiness` above this is worth lowering on a broker host.
const SWAPPINESS_MAX: u64 = 10;

#[derive(Debug, clap::Args)]
pub struct TuneArgs {
    #[command(subcommand)]
    pub command: TuneCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum TuneCommand {
    /// Report host settings that matter for Ferrocket, with recommendations.
    Check(CheckArgs),
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The broker's data directory (storePathRootDir); need not exist yet.
    #[arg(long, default_value = "./data")]
    pub data_dir: PathBuf,
    /// Shards planned (default: the host's default, as the broker picks
    /// it), for the memlock need.
    #[arg(long)]
    pub shards: Option<u64>,
    /// The broker's config file: checked for what a broker needs to be
    /// found (namesrvAddr), and its shardCount used.
    #[arg(short = 'c', long = "config")]
    pub config: Option<PathBuf>,
    /// Print the findings as JSON.
    #[arg(long)]
    pub json: bool,
}

/// How a finding stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Ok,
    Info,
    Warn,
}

impl Level {
    fn tag(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Info => "info",
            Level::Warn => "warn",
        }
    }
}

/// One checked item.
#[derive(Debug, Clone)]
pub struct Finding {
    pub item: &'static str,
    pub level: Level,
    pub observed: String,
    pub recommendation: String,
}

fn finding(
    item: &'static str,
    level: Level,
    observed: String,
    recommendation: impl Into<String>,
) -> Finding {
    Finding {
        item,
        level,
        observed,
        recommendation: recommendation.into(),
    }
}

pub fn run(args: TuneArgs) -> Result<(), String> {
    let TuneCommand::Check(check) = args.command;
    let findings = check_all(&check);
    if check.json {
        let items: Vec<_> = findings
            .iter()
            .map(|f| json!({"item": f.item, "level": f.level.tag(), "observed": f.observed, "recommendation": f.recommendation}))
            .collect();
        let text =
            serde_json::to_string_pretty(&json!({"data_dir": check.data_dir, "findings": items}))
                .map_err(|e| format!("cannot encode findings: {e}"))?;
        println!("{text}");
        return Ok(());
    }
    println!(
        "ferrocket tune check (data dir {})",
        check.data_dir.display()
    );
    for f in &findings {
        println!("[{:>4}] {:<16} {}", f.level.tag(), f.item, f.observed);
        if !f.recommendation.is_empty() {
            println!("       {:<16} -> {}", "", f.recommendation);
        }
    }
    let warnings = findings.iter().filter(|f| f.level == Level::Warn).count();
    println!("{warnings} warning(s); profiles and knobs: tuning/README.md");
    Ok(())
}

fn check_all(args: &CheckArgs) -> Vec<Finding> {
    let online = read("/sys/devices/system/cpu/online")
        .map(|s| parse_cpu_list(&s))
        .unwrap_or_default();
    let cores = if online.is_empty() {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        online.len()
    };
    let isolated = read("/sys/devices/system/cpu/isolated")
        .map(|s| parse_cpu_list(&s))
        .unwrap_or_default();
    let config = args.config.as_deref().map(crate::properties::load);
    let configured_shards = match &config {
        Some(Ok(settings)) => {
            let count = settings
                .get("shardCount")
                .and_then(|s| s.value.parse::<u64>().ok());
            let cores = settings
                .get("shardCores")
                .map(|s| s.value.split(',').filter(|c| !c.trim().is_empty()).count() as u64);
            count.filter(|n| *n > 0).or(cores.filter(|n| *n > 0))
        }
        _ => None,
    };
    let host_default = ferrocket_runtime::shard::host_shard_cores(&online).len() as u64;
    let shards = args
        .shards
        .or(configured_shards)
        .unwrap_or(host_default)
        .max(1);
    let dir = existing_ancestor(&args.data_dir);
    vec![
        check_broker_config(args.config.as_deref(), config),
        check_cpus(&online, cores),
        check_isolated(&isolated, &online),
        check_governor(),
        check_io_uring(),
        check_memlock(shards),
        check_disk(&dir, &args.data_dir),
        check_filesystem(&dir),
        check_thp(),
        check_dirty(),
        check_swappiness(),
    ]
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn read_u64(path: &str) -> Option<u64> {
    read(path).and_then(|s| s.parse().ok())
}

/// Parses a kernel CPU list such as `0-3,8,10-11` (empty: none).
pub fn parse_cpu_list(text: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in text
        .trim()
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        match part.split_once('-') {
            Some((lo, hi)) => {
                if let (Ok(lo), Ok(hi)) = (lo.trim().parse::<usize>(), hi.trim().parse::<usize>()) {
                    cpus.extend(lo..=hi.min(lo + 65_536));
                }
            }
            None => cpus.extend(part.parse::<usize>().ok()),
        }
    }
    cpus
}

/// Formats CPUs as a comma list (the `shardCores` syntax).
pub fn comma_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The selected entry of a sysfs choice list, e.g. `always [madvise] never`.
pub fn bracketed(text: &str) -> Option<&str> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(&text[start + 1..end])
}

fn numa_nodes() -> Vec<(String, Vec<usize>)> {
    let mut nodes = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/sys/devices/system/node") {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("node") && name[4..].chars().all(|c| c.is_ascii_digit()) {
                let cpus =
                    std::fs::read_to_string(entry.path().join("cpulist")).unwrap_or_default();
                nodes.push((name, parse_cpu_list(&cpus)));
            }
        }
    }
    nodes.sort();
    nodes
}

/// Shard/appender placement for `cpus` (the isolated ones, or all online).
pub fn suggest_layout(cpus: &[usize]) -> String {
    match cpus {
        [] => "shardCount=0 (the host's default)".into(),
        [only] => format!("shardCores={only} (one shard, the appender on its executor)"),
        [first, _] => format!(
            "shardCount=1 shardCores={first} (the default on 2 cores: one shard, the appender \
             on its executor; 2 shards and an appender thread cost more CPU per message here)"
        ),
        [first, rest @ ..] if cpus.len() >= 4 => format!(
            "appenderCore={first} shardCores={} (the default leaves core {first} to the \
             appender, unpinned)",
            comma_list(rest)
        ),
        [first, rest @ ..] => format!(
            "shardCores={} (the default: core {first} is left to the appender thread)",
            comma_list(rest)
        ),
    }
}

/// What a broker config must say for clients to find the broker.
fn check_broker_config(
    path: Option<&Path>,
    loaded: Option<Result<std::collections::BTreeMap<String, crate::properties::Setting>, String>>,
) -> Finding {
    let item = "broker config";
    let (Some(path), Some(loaded)) = (path, loaded) else {
        return finding(
            item,
            Level::Info,
            "none given".into(),
            "pass -c broker.conf to check it too (namesrvAddr, shardCount)",
        );
    };
    match loaded {
        Err(error) => finding(item, Level::Warn, error, "fix the file before starting"),
        Ok(settings) => match settings.get("namesrvAddr").filter(|s| !s.value.is_empty()) {
            Some(setting) => finding(
                item,
                Level::Ok,
                format!("{}: namesrvAddr={}", path.display(), setting.value),
                "",
            ),
            None => finding(
                item,
                Level::Warn,
                format!("{}: namesrvAddr is not set", path.display()),
                "without it the broker registers with no name server and no client can find \
                 it: add namesrvAddr=HOST:9876",
            ),
        },
    }
}

fn check_cpus(online: &[usize], cores: usize) -> Finding {
    let nodes = numa_nodes();
    let observed = format!(
        "{cores} online CPU(s) [{}], {} NUMA node(s)",
        comma_list(online),
        nodes.len().max(1)
    );
    if nodes.len() > 1 {
        let (name, cpus) = &nodes[0];
        return finding(
            "cpus/numa",
            Level::Warn,
            observed,
            format!(
                "keep the broker on one NUMA node (the NIC's and the disk's): e.g. {name}: {}; check /sys/class/net/*/device/numa_node",
                suggest_layout(cpus)
            ),
        );
    }
    finding("cpus/numa", Level::Ok, observed, suggest_layout(online))
}

fn check_isolated(isolated: &[usize], online: &[usize]) -> Finding {
    if isolated.is_empty() {
        return finding(
            "isolated cpus",
            Level::Info,
            "none (/sys/devices/system/cpu/isolated is empty)".into(),
            format!(
                "for the low-latency profile boot with isolcpus=/nohz_full= on the shard cores (e.g. isolcpus={}) and pin shards there",
                comma_list(online.get(1..).unwrap_or(&[]))
            ),
        );
    }
    finding(
        "isolated cpus",
        Level::Ok,
        comma_list(isolated),
        format!("pin the broker to them: {}", suggest_layout(isolated)),
    )
}

fn check_governor() -> Finding {
    match read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") {
        None => finding(
            "cpu governor",
            Level::Info,
            "not exposed (VM or no cpufreq)".into(),
            "",
        ),
        Some(g) if g == "performance" => finding("cpu governor", Level::Ok, g, ""),
        Some(g) => finding(
            "cpu governor",
            Level::Warn,
            g,
            "set the performance governor: cpupower frequency-set -g performance",
        ),
    }
}

/// What `/proc/sys/kernel/io_uring_disabled` means.
pub fn io_uring_disabled_meaning(value: u64) -> &'static str {
    match value {
        0 => "enabled for all",
        1 => "only for processes in kernel.io_uring_group (or CAP_SYS_ADMIN)",
        _ => "disabled for all",
    }
}

/// Tries io_uring_setup; Ok(()) when a ring could be created.
fn probe_io_uring() -> Result<(), std::io::Error> {
    // struct io_uring_params is 120 bytes; zeroed means default flags.
    let mut params = [0u32; 30];
    // SAFETY: io_uring_setup reads and writes only the 120-byte params buffer
    // we own; a returned fd is closed right away.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_io_uring_setup,
            PROBE_RING_ENTRIES,
            params.as_mut_ptr(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is the ring descriptor just created and owned by nobody else.
    unsafe { libc::close(fd as libc::c_int) };
    Ok(())
}

fn check_io_uring() -> Finding {
    let sysctl = read_u64("/proc/sys/kernel/io_uring_disabled");
    let setting = sysctl.map_or(
        "kernel.io_uring_disabled absent (kernel < 6.6: enabled)".to_string(),
        |v| {
            format!(
                "kernel.io_uring_disabled={v} ({})",
                io_uring_disabled_meaning(v)
            )
        },
    );
    match probe_io_uring() {
        Ok(()) => finding(
            "io_uring",
            Level::Ok,
            format!("io_uring_setup works; {setting}"),
            "",
        ),
        Err(error) => {
            let fix = match error.raw_os_error() {
                Some(libc::ENOSYS) => "the kernel lacks io_uring: use Linux 5.10+ built with CONFIG_IO_URING".to_string(),
                Some(libc::EPERM) if sysctl.unwrap_or(0) > 0 => "sysctl -w kernel.io_uring_disabled=0 (or add the broker's group to kernel.io_uring_group)".into(),
                Some(libc::EPERM) => "blocked by seccomp or a container runtime: allow io_uring_setup/enter/register (e.g. docker --security-opt seccomp=unconfined)".into(),
                Some(libc::ENOMEM) => "raise RLIMIT_MEMLOCK (see memlock)".into(),
                _ => "Ferrocket's shards need io_uring; check the kernel log".into(),
            };
            finding(
                "io_uring",
                Level::Warn,
                format!("io_uring_setup failed: {error}; {setting}"),
                fix,
            )
        }
    }
}

fn check_memlock(shards: u64) -> Finding {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct we pass and nothing else.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit) };
    let need = (shards + EXECUTORS_EXTRA) * MEMLOCK_BYTES_PER_EXECUTOR;
    let need_text = format!(
        "need about {} MiB for {shards} shard(s) + appender",
        need >> 20
    );
    if rc != 0 {
        return finding(
            "memlock",
            Level::Warn,
            format!("getrlimit failed; {need_text}"),
            "",
        );
    }
    let show = |v: libc::rlim_t| {
        if v == libc::RLIM_INFINITY {
            "unlimited".to_string()
        } else {
            format!("{} MiB", v >> 20)
        }
    };
    let observed = format!(
        "RLIMIT_MEMLOCK soft {} / hard {}; {need_text}",
        show(limit.rlim_cur),
        show(limit.rlim_max)
    );
    if limit.rlim_cur == libc::RLIM_INFINITY || limit.rlim_cur >= need {
        return finding("memlock", Level::Ok, observed, "");
    }
    finding(
        "memlock",
        Level::Warn,
        observed,
        "raise it: `ulimit -l unlimited`, systemd LimitMEMLOCK=infinity, or `* - memlock unlimited` in /etc/security/limits.conf (below need, io_uring buffers are not registered and I/O is slower)",
    )
}

/// Walks up to the nearest directory that exists.
fn check_thp() -> Finding {
    let enabled = read("/sys/kernel/mm/transparent_hugepage/enabled");
    let defrag = read("/sys/kernel/mm/transparent_hugepage/defrag");
    let Some(enabled) = enabled else {
        return finding("thp", Level::Info, "not available".into(), "");
    };
    let mode = bracketed(&enabled).unwrap_or("?").to_string();
    let defrag_mode = defrag
        .as_deref()
        .and_then(bracketed)
        .unwrap_or("?")
        .to_string();
    let observed = format!("enabled={mode}, defrag={defrag_mode}");
    if mode == "always" || defrag_mode == "always" {
        return finding("thp", Level::Warn, observed, "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled and echo defer+madvise > .../defrag (synchronous compaction causes latency spikes)");
    }
    finding("thp", Level::Ok, observed, "")
}

fn check_dirty() -> Finding {
    let ratio = read_u64("/proc/sys/vm/dirty_ratio").unwrap_or(0);
    let background_ratio = read_u64("/proc/sys/vm/dirty_background_ratio").unwrap_or(0);
    let bytes = read_u64("/proc/sys/vm/dirty_bytes").unwrap_or(0);
    let background_bytes = read_u64("/proc/sys/vm/dirty_background_bytes").unwrap_or(0);
    let expire = read_u64("/proc/sys/vm/dirty_expire_centisecs").unwrap_or(0);
    let observed = format!(
        "dirty_ratio={ratio} dirty_background_ratio={background_ratio} dirty_bytes={bytes} dirty_background_bytes={background_bytes} dirty_expire_centisecs={expire}"
    );
    let throttles = (bytes > 0 && bytes < 256 << 20) || (bytes == 0 && ratio > 0 && ratio < 10);
    if throttles {
        return finding("vm.dirty_*", Level::Warn, observed, "the dirty limit is low enough to throttle buffered CommitLog writes: vm.dirty_ratio=20 (or dirty_bytes >= 1 GiB), or use writeMode=direct");
    }
    finding(
        "vm.dirty_*",
        Level::Ok,
        observed,
        "writeMode=buffered: the broker's own fdatasync (flushIntervalCommitLog) bounds dirty data; for smooth writeback set vm.dirty_background_bytes=268435456. writeMode=direct bypasses these",
    )
}

fn check_swappiness() -> Finding {
    let swappiness = read_u64("/proc/sys/vm/swappiness");
    let swap_devices =
        std::fs::read_to_string("/proc/swaps").map_or(0, |s| s.lines().count().saturating_sub(1));
    let Some(value) = swappiness else {
        return finding("swappiness", Level::Info, "unknown".into(), "");
    };
    let observed = format!("vm.swappiness={value}, {swap_devices} swap device(s)");
    if value > SWAPPINESS_MAX && swap_devices > 0 {
        return finding("swappiness", Level::Warn, observed, format!("sysctl -w vm.swappiness={SWAPPINESS_MAX}: keep the hot CommitLog tail and ConsumeQueues in memory"));
    }
    finding("swappiness", Level::Ok, observed, "")
}

#[cfg(test)]
mod tests;
