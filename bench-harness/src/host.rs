//! Facts about the machine and the code under test, written into every
//! report so numbers can be compared and reproduced.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde::Serialize;

/// Host and build facts.
#[derive(Debug, Clone, Serialize)]
pub struct HostFacts {
    pub hostname: String,
    pub cpu_model: String,
    /// Logical CPUs this process may run on.
    pub cpus_available: usize,
    /// Logical CPUs the kernel lists (`processor` lines).
    pub cpus_online: usize,
    pub kernel: String,
    pub memory_total_kib: Option<u64>,
    /// `git rev-parse HEAD` of the working directory, `+dirty` when tracked
    /// files changed.
    pub git_revision: Option<String>,
    /// Unix time the run started, seconds.
    pub started_unix_s: u64,
    pub harness_version: &'static str,
}

/// Collects the facts; anything unreadable is reported as unknown.
pub fn collect() -> HostFacts {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    HostFacts {
        hostname: read_trimmed("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into()),
        cpu_model: cpu_model(&cpuinfo).unwrap_or_else(|| "unknown".into()),
        cpus_available: std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpus_online: cpuinfo
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count(),
        kernel: read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
        memory_total_kib: mem_total_kib(&meminfo),
        git_revision: git_revision(),
        started_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        harness_version: env!("CARGO_PKG_VERSION"),
    }
}

impl HostFacts {
    /// The chart's line about the host and what ran: the git revision, or
    /// outside a checkout (none) the harness's version.
    pub fn subtitle(&self) -> String {
        let built = match &self.git_revision {
            Some(revision) => format!("git {revision}"),
            None => format!("ferrocket-bench {}", self.harness_version),
        };
        format!(
            "{} | {} CPUs | kernel {} | {built}",
            self.cpu_model, self.cpus_online, self.kernel
        )
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The first `model name` of /proc/cpuinfo (x86), else `Model`/`CPU part`
/// style fields other architectures use.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    for key in ["model name", "Model", "cpu model", "Processor"] {
        for line in cpuinfo.lines() {
            if let Some((name, value)) = line.split_once(':') {
                if name.trim() == key && !value.trim().is_empty() {
                    return Some(value.trim().to_string());
                }
            }
        }
    }
    None
}

/// `MemTotal` of /proc/meminfo in KiB.
pub fn mem_total_kib(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

fn git_revision() -> Option<String> {
    let output = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let mut revision = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|o| o.status.success() && !o.stdout.is_empty());
    if dirty {
        revision.push_str("+dirty");
    }
    Some(revision)
}

/// Reads a broker configuration file (Java properties: `key=value` or
/// `key: value`, `#`/`!` comments) into a sorted map for the report.
pub fn read_properties(path: &Path) -> Result<BTreeMap<String, String>, std::io::Error> {
    Ok(parse_properties(&std::fs::read_to_string(path)?))
}

pub fn parse_properties(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let split = line.find(['=', ':']);
        let (key, value) = match split {
            Some(at) => (&line[..at], &line[at + 1..]),
            None => (line, ""),
        };
        out.insert(key.trim().to_string(), value.trim().to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_checkout_the_subtitle_names_the_version() {
        let mut host = collect();
        host.git_revision = None;
        let line = host.subtitle();
        assert!(
            line.ends_with(&format!("| ferrocket-bench {}", env!("CARGO_PKG_VERSION"))),
            "{line}"
        );
        assert!(!line.contains("git"), "{line}");
        host.git_revision = Some("abc123".into());
        assert!(host.subtitle().ends_with("| git abc123"));
    }

    #[test]
    fn cpu_model_and_memory_come_from_proc_text() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\
                       processor\t: 1\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
        assert_eq!(
            cpu_model(cpuinfo).unwrap(),
            "Intel(R) Xeon(R) CPU @ 2.20GHz"
        );
        assert_eq!(cpu_model("processor : 0\n"), None);
        assert_eq!(
            mem_total_kib("MemTotal:       16314204 kB\nMemFree: 1 kB\n"),
            Some(16_314_204)
        );
        assert_eq!(mem_total_kib("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn properties_parse_like_java() {
        let map = parse_properties(
            "# profile\nflushDiskType=ASYNC_FLUSH\n  shardCores = 0,1 \n! bang comment\nwriteMode: direct\nflag\n",
        );
        assert_eq!(map.get("flushDiskType").unwrap(), "ASYNC_FLUSH");
        assert_eq!(map.get("shardCores").unwrap(), "0,1");
        assert_eq!(map.get("writeMode").unwrap(), "direct");
        assert_eq!(map.get("flag").unwrap(), "");
        assert_eq!(map.len(), 4);
    }
}
