//! CPU time of processes from `/proc/PID/stat`, so a run reports how much
//! broker CPU each message cost, not only how fast it went.
//!
//! `/proc/PID/stat` sums every thread of the process. utime and stime are
//! fields 14 and 15 (1-based), counted after the `(comm)` field, whose text
//! may itself hold spaces and parentheses, so parsing starts after the last
//! `)`. Units are clock ticks (`sysconf(_SC_CLK_TCK)`, usually 100/s).

use std::collections::BTreeSet;
use std::path::Path;

use crate::error::BenchError;

/// Deepest process tree followed when children are included.
pub const PROCESS_TREE_DEPTH_MAX: usize = 8;

/// User and system CPU time of one process, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub user: u64,
    pub system: u64,
}

impl CpuTicks {
    pub fn total(&self) -> u64 {
        self.user + self.system
    }

    pub fn saturating_sub(&self, earlier: &CpuTicks) -> CpuTicks {
        CpuTicks {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }

    pub fn add(&self, other: &CpuTicks) -> CpuTicks {
        CpuTicks {
            user: self.user + other.user,
            system: self.system + other.system,
        }
    }
}

/// Parses the content of `/proc/PID/stat`.
pub fn parse_stat(content: &str) -> Result<CpuTicks, String> {
    let close = content
        .rfind(')')
        .ok_or_else(|| "no `(comm)` field".to_string())?;
    // Fields from 3 (state) on; utime is field 14, stime field 15.
    let rest: Vec<&str> = content[close + 1..].split_ascii_whitespace().collect();
    let field = |number: usize| -> Result<u64, String> {
        let index = number - 3;
        let text = rest
            .get(index)
            .ok_or_else(|| format!("only {} fields after comm, need field {number}", rest.len()))?;
        text.parse::<u64>()
            .map_err(|e| format!("field {number} `{text}`: {e}"))
    };
    Ok(CpuTicks {
        user: field(14)?,
        system: field(15)?,
    })
}

/// Parses `/proc/PID/task/TID/children`: space-separated child pids.
pub fn parse_children(content: &str) -> Vec<u32> {
    content
        .split_ascii_whitespace()
        .filter_map(|pid| pid.parse().ok())
        .collect()
}

/// Clock ticks per second for the stat fields.
pub fn clock_ticks_per_s() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as u64
    } else {
        100
    }
}

/// CPU ticks of one process.
pub fn read_ticks(pid: u32) -> Result<CpuTicks, BenchError> {
    let path = format!("/proc/{pid}/stat");
    let content = std::fs::read_to_string(&path).map_err(|e| BenchError::io(&path, e))?;
    parse_stat(&content).map_err(|e| BenchError::Setup(format!("{path}: {e}")))
}

/// `pid` and, when `children` is set, its descendants (by the kernel's
/// per-thread child lists), without duplicates.
pub fn process_tree(pid: u32, children: bool) -> BTreeSet<u32> {
    let mut found = BTreeSet::from([pid]);
    if !children {
        return found;
    }
    let mut frontier = vec![pid];
    for _ in 0..PROCESS_TREE_DEPTH_MAX {
        let mut next = Vec::new();
        for parent in frontier {
            let tasks = Path::new("/proc").join(parent.to_string()).join("task");
            let Ok(entries) = std::fs::read_dir(&tasks) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(content) = std::fs::read_to_string(entry.path().join("children")) else {
                    continue;
                };
                for child in parse_children(&content) {
                    if found.insert(child) {
                        next.push(child);
                    }
                }
            }
        }
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
    found
}

/// Watches the CPU time of a set of processes (a broker, optionally with
/// its children; or this harness itself).
#[derive(Debug, Clone)]
pub struct CpuProbe {
    roots: Vec<u32>,
    children: bool,
    ticks_per_s: u64,
}

impl CpuProbe {
    pub fn new(roots: Vec<u32>, children: bool) -> Self {
        Self {
            roots,
            children,
            ticks_per_s: clock_ticks_per_s(),
        }
    }

    /// This process.
    pub fn this_process() -> Self {
        Self::new(vec![std::process::id()], false)
    }

    pub fn roots(&self) -> &[u32] {
        &self.roots
    }

    /// Checks that every root process can be read now.
    pub fn check(&self) -> Result<(), BenchError> {
        for pid in &self.roots {
            read_ticks(*pid)?;
        }
        Ok(())
    }

    /// Every process watched now: the roots and, when children are
    /// counted, their descendants.
    pub fn measured_pids(&self) -> BTreeSet<u32> {
        let mut pids = BTreeSet::new();
        for root in &self.roots {
            pids.extend(process_tree(*root, self.children));
        }
        pids
    }

    /// Summed CPU ticks of every watched process that exists now.
    pub fn sample(&self) -> CpuTicks {
        self.measured_pids()
            .into_iter()
            .filter_map(|pid| read_ticks(pid).ok())
            .fold(CpuTicks::default(), |sum, ticks| sum.add(&ticks))
    }

    /// Converts ticks to seconds.
    pub fn seconds(&self, ticks: u64) -> f64 {
        ticks as f64 / self.ticks_per_s as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (ferrocket) S 1 4242 4242 0 -1 4194560 5121 0 0 0 \
        1234 567 0 0 20 0 9 0 12345 1048576000 2500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";

    #[test]
    fn utime_and_stime_are_fields_14_and_15() {
        let ticks = parse_stat(STAT).unwrap();
        assert_eq!(
            ticks,
            CpuTicks {
                user: 1234,
                system: 567
            }
        );
        assert_eq!(ticks.total(), 1801);
    }

    #[test]
    fn comm_with_spaces_and_parentheses_does_not_shift_fields() {
        let tricky = STAT.replace("(ferrocket)", "(a) b (c) d)");
        assert_eq!(parse_stat(&tricky).unwrap().user, 1234);
    }

    #[test]
    fn truncated_or_garbled_stat_is_an_error() {
        assert!(parse_stat("4242 ferrocket S 1").is_err());
        assert!(parse_stat("4242 (x) S 1 2 3").is_err());
        let garbled = STAT.replace(" 1234 ", " 12x4 ");
        assert!(parse_stat(&garbled).unwrap_err().contains("field 14"));
    }

    #[test]
    fn this_process_is_readable_and_missing_ones_are_errors() {
        let probe = CpuProbe::this_process();
        probe.check().unwrap();
        assert_eq!(probe.seconds(clock_ticks_per_s() * 3), 3.0);
        // Pid 0 never has a /proc entry.
        assert!(read_ticks(0).is_err());
        assert!(CpuProbe::new(vec![0], false).check().is_err());
        assert_eq!(CpuProbe::new(vec![0], false).sample(), CpuTicks::default());
    }

    #[test]
    fn children_lists_parse_and_tolerate_junk() {
        assert_eq!(parse_children("12 345 6\n"), vec![12, 345, 6]);
        assert_eq!(parse_children(""), Vec::<u32>::new());
        assert_eq!(parse_children("7 x 8"), vec![7, 8]);
        assert!(process_tree(std::process::id(), true).contains(&std::process::id()));
    }

    #[test]
    fn tick_arithmetic_saturates() {
        let a = CpuTicks {
            user: 10,
            system: 5,
        };
        let b = CpuTicks { user: 4, system: 9 };
        assert_eq!(a.saturating_sub(&b), CpuTicks { user: 6, system: 0 });
        assert_eq!(a.add(&b).total(), 28);
    }
}
