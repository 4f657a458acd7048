//! The final table (stdout) and the JSON report.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::hist::{format_us, LatencySummary};
use crate::host::HostFacts;
use crate::progress::thousands;
use crate::recorder::Sample;
use crate::window::TargetResult;

/// What the headline throughput counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Headline {
    /// Messages acknowledged (or queued, oneway) by the broker.
    Sent,
    /// Messages pulled back.
    Received,
}

/// Which latency the table's first row shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestLatency {
    Send,
    Pull,
}

/// Broker CPU over the measured time.
#[derive(Debug, Clone, Serialize)]
pub struct CpuReport {
    pub pids: Vec<u32>,
    pub cpu_s: f64,
    /// Percent of one core, averaged over the measured time.
    pub cpu_pct_of_core: f64,
    /// CPU microseconds per headline message.
    pub cpu_us_per_msg: f64,
}

/// Everything about one target.
#[derive(Debug, Clone, Serialize)]
pub struct TargetReport {
    pub label: String,
    pub namesrv: String,
    pub topic: String,
    pub queues: usize,
    pub brokers: BTreeMap<String, String>,
    pub broker_config: Option<BTreeMap<String, String>>,
    /// What the first master broker says of itself.
    pub broker: crate::target::BrokerFacts,
    pub windows: u32,
    pub measured_s: f64,
    pub headline: Headline,
    pub msgs_per_s: f64,
    /// Body megabytes (10^6 bytes) per second of the headline direction.
    pub mb_per_s: f64,
    /// Send requests (failed ones included).
    pub requests: u64,
    /// Pull requests that returned messages or failed.
    pub pulls: u64,
    pub sent_msgs: u64,
    pub sent_bytes: u64,
    pub received_msgs: u64,
    pub received_bytes: u64,
    /// What `request_latency` measures.
    pub request_latency_kind: &'static str,
    pub request_latency: LatencySummary,
    pub e2e_latency: Option<LatencySummary>,
    pub errors: BTreeMap<String, u64>,
    pub error_total: u64,
    pub broker_cpu: Option<CpuReport>,
    pub client_cpu: CpuReport,
    /// Median of the measured one-second samples' rate (the headline
    /// direction). Unlike `msgs_per_s` it holds when the host's speed
    /// changes during a run: on a VM that takes fresh memory from its host
    /// for new page-cache pages, compare runs fell from about 210,000 to
    /// 130,000 msg/s a few GiB in, and whichever side had more seconds
    /// before that won by up to 8% against itself.
    pub msgs_per_s_1s_median: Option<f64>,
    /// Median of the measured one-second samples' broker CPU-µs per
    /// message (when broker pids are watched).
    pub broker_cpu_us_1s_median: Option<f64>,
    pub timeline: Vec<Sample>,
}

/// Medians of the measured one-second samples: the headline rate and the
/// broker's CPU-µs per message.
fn sample_medians(samples: &[Sample], headline: Headline) -> (Option<f64>, Option<f64>) {
    let rate = |s: &Sample| match headline {
        Headline::Sent => s.sent_per_s,
        Headline::Received => s.received_per_s,
    };
    let measured = || samples.iter().filter(|s| !s.warmup);
    let rates = measured().map(rate).collect();
    let cpu_us = measured()
        .filter(|s| rate(s) > 0.0)
        .filter_map(|s| s.broker_cpu_pct.map(|pct| pct / 100.0 * 1e6 / rate(s)))
        .collect();
    (median(rates), median(cpu_us))
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

impl TargetReport {
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        label: &str,
        namesrv: &str,
        topic: &str,
        queues: usize,
        brokers: BTreeMap<String, String>,
        broker_config: Option<BTreeMap<String, String>>,
        broker_pids: &[u32],
        ticks_per_s: u64,
        result: &TargetResult,
        headline: Headline,
        request_latency: (RequestLatency, &'static str),
        e2e: bool,
    ) -> TargetReport {
        let (source, request_latency_kind) = request_latency;
        let request_hist = match source {
            RequestLatency::Send => &result.totals.send_latency,
            RequestLatency::Pull => &result.totals.pull_latency,
        };
        let totals = &result.totals;
        let secs = result.measured_s.max(1e-9);
        let (msgs, bytes) = match headline {
            Headline::Sent => (totals.sent_msgs, totals.sent_bytes),
            Headline::Received => (totals.received_msgs, totals.received_bytes),
        };
        let cpu = |pids: Vec<u32>, ticks: u64| {
            let cpu_s = ticks as f64 / ticks_per_s.max(1) as f64;
            CpuReport {
                pids,
                cpu_s,
                cpu_pct_of_core: 100.0 * cpu_s / secs,
                cpu_us_per_msg: if msgs == 0 {
                    0.0
                } else {
                    cpu_s * 1e6 / msgs as f64
                },
            }
        };
        let (msgs_per_s_1s_median, broker_cpu_us_1s_median) =
            sample_medians(&result.samples, headline);
        TargetReport {
            label: label.to_string(),
            namesrv: namesrv.to_string(),
            topic: topic.to_string(),
            queues,
            brokers,
            broker_config,
            broker: Default::default(),
            windows: result.windows,
            measured_s: result.measured_s,
            headline,
            msgs_per_s: msgs as f64 / secs,
            mb_per_s: bytes as f64 / secs / 1e6,
            requests: totals.requests,
            pulls: totals.pulls,
            sent_msgs: totals.sent_msgs,
            sent_bytes: totals.sent_bytes,
            received_msgs: totals.received_msgs,
            received_bytes: totals.received_bytes,
            request_latency_kind,
            request_latency: request_hist.summary(),
            e2e_latency: e2e.then(|| totals.e2e_latency.summary()),
            errors: totals.errors.clone(),
            error_total: totals.error_total(),
            broker_cpu: result
                .broker_cpu
                .map(|ticks| cpu(broker_pids.to_vec(), ticks.total())),
            client_cpu: cpu(vec![std::process::id()], result.client_cpu.total()),
            msgs_per_s_1s_median,
            broker_cpu_us_1s_median,
            timeline: result.samples.clone(),
        }
    }
}

/// One line of a target's headline numbers, for the top of a plot: rate,
/// latency, broker CPU per message and the broker's shards.
pub fn headline_line(report: &TargetReport) -> String {
    let ms = |us: f64| us / 1_000.0;
    let lat = &report.request_latency;
    let mut line = format!(
        "{}: {} msg/s ({:.1} MB/s), {} p50 {:.2} / p99 {:.2} ms",
        report.label,
        thousands(report.msgs_per_s),
        report.mb_per_s,
        report.request_latency_kind,
        ms(lat.p50_us),
        ms(lat.p99_us)
    );
    if let Some(e2e) = &report.e2e_latency {
        let _ = write!(
            line,
            ", e2e p50 {:.2} / p99 {:.2} ms",
            ms(e2e.p50_us),
            ms(e2e.p99_us)
        );
    }
    if let Some(cpu) = &report.broker_cpu {
        let _ = write!(line, ", broker {:.2} CPU-µs/msg", cpu.cpu_us_per_msg);
    }
    if let Some(shards) = report.broker.shards {
        let _ = write!(line, ", {shards} shard(s)");
    }
    if report.error_total > 0 {
        let _ = write!(line, ", {} errors", report.error_total);
    }
    line
}

/// A/B ratios of a compare run (every ratio is A divided by B).
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub rounds: u32,
    pub round_s: u64,
    pub ratios: BTreeMap<String, Option<f64>>,
}

impl Comparison {
    pub fn build(a: &TargetReport, b: &TargetReport, rounds: u32, round_s: u64) -> Comparison {
        let mut ratios = BTreeMap::new();
        for (name, _, va, vb) in comparable(a, b) {
            ratios.insert(name.to_string(), ratio(va, vb));
        }
        Comparison {
            a: a.label.clone(),
            b: b.label.clone(),
            rounds,
            round_s,
            ratios,
        }
    }
}

/// `a / b`, or `None` when b is zero or either side is missing.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 && a.is_finite() && b.is_finite() => Some(a / b),
        _ => None,
    }
}

/// Which way a compared metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

impl Better {
    fn words(self) -> &'static str {
        match self {
            Better::Higher => "higher is better",
            Better::Lower => "lower is better",
        }
    }
}

/// A compared metric: its name, which way is better, A's and B's values.
type Compared = (&'static str, Better, Option<f64>, Option<f64>);

/// Every compared metric.
fn comparable(a: &TargetReport, b: &TargetReport) -> Vec<Compared> {
    use Better::{Higher, Lower};
    let lat = |r: &TargetReport, f: fn(&LatencySummary) -> f64| Some(f(&r.request_latency));
    let e2e = |r: &TargetReport, f: fn(&LatencySummary) -> f64| r.e2e_latency.as_ref().map(f);
    let cpu = |r: &TargetReport| r.broker_cpu.as_ref().map(|c| c.cpu_us_per_msg);
    let errors = |r: &TargetReport| Some(r.error_total as f64);
    vec![
        ("msgs_per_s", Higher, Some(a.msgs_per_s), Some(b.msgs_per_s)),
        (
            "msgs_per_s_1s_median",
            Higher,
            a.msgs_per_s_1s_median,
            b.msgs_per_s_1s_median,
        ),
        ("mb_per_s", Higher, Some(a.mb_per_s), Some(b.mb_per_s)),
        (
            "request_p50_us",
            Lower,
            lat(a, |s| s.p50_us),
            lat(b, |s| s.p50_us),
        ),
        (
            "request_p99_us",
            Lower,
            lat(a, |s| s.p99_us),
            lat(b, |s| s.p99_us),
        ),
        (
            "request_p999_us",
            Lower,
            lat(a, |s| s.p999_us),
            lat(b, |s| s.p999_us),
        ),
        (
            "e2e_p50_us",
            Lower,
            e2e(a, |s| s.p50_us),
            e2e(b, |s| s.p50_us),
        ),
        (
            "e2e_p99_us",
            Lower,
            e2e(a, |s| s.p99_us),
            e2e(b, |s| s.p99_us),
        ),
        ("broker_cpu_us_per_msg", Lower, cpu(a), cpu(b)),
        (
            "broker_cpu_us_1s_median",
            Lower,
            a.broker_cpu_us_1s_median,
            b.broker_cpu_us_1s_median,
        ),
        ("errors", Lower, errors(a), errors(b)),
    ]
}

/// The whole JSON report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub mode: &'static str,
    pub parameters: serde_json::Value,
    pub host: HostFacts,
    pub targets: Vec<TargetReport>,
    pub comparison: Option<Comparison>,
    /// With `--with-ceiling`: the null broker's rate (its report is the
    /// last target) and each other target's share of it.
    pub ceiling: Option<CeilingShare>,
}

/// What a report says of the ceiling: its rate, and each target's share.
#[derive(Debug, Clone, Serialize)]
pub struct CeilingShare {
    pub msgs_per_s: f64,
    /// Label and msg/s of a target over the ceiling's.
    pub shares: Vec<(String, f64)>,
}

impl CeilingShare {
    pub fn build(
        ceiling: &crate::report::TargetReport,
        targets: &[&crate::report::TargetReport],
    ) -> Self {
        let share = |msgs_per_s: f64| match ceiling.msgs_per_s > 0.0 {
            true => msgs_per_s / ceiling.msgs_per_s,
            false => 0.0,
        };
        Self {
            msgs_per_s: ceiling.msgs_per_s,
            shares: targets
                .iter()
                .map(|t| (t.label.clone(), share(t.msgs_per_s)))
                .collect(),
        }
    }

    /// One line per target: "LABEL: 14.2% of the ceiling (1,204,000 msg/s)".
    pub fn lines(&self) -> Vec<String> {
        self.shares
            .iter()
            .map(|(label, share)| {
                format!(
                    "{label}: {:.1}% of the ceiling ({:.0} msg/s)",
                    share * 100.0,
                    self.msgs_per_s
                )
            })
            .collect()
    }
}

fn latency_row(out: &mut String, name: &str, summary: &LatencySummary) {
    let _ = write!(out, "  {name:<22} {:>10}", thousands(summary.count as f64));
    for (_, value) in summary.columns() {
        let _ = write!(out, " {:>10}", format_us(value));
    }
    out.push('\n');
}

/// The final table of one target.
pub fn target_table(mode: &str, report: &TargetReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "== {} — {mode}: {:.1} s measured over {} window(s), {} queue(s) ==",
        report.label, report.measured_s, report.windows, report.queues
    );
    let _ = writeln!(
        out,
        "  throughput: {} msg/s, {:.1} MB/s ({:?}; sent {} msgs in {} requests, received {} msgs in {} pulls)",
        thousands(report.msgs_per_s),
        report.mb_per_s,
        report.headline,
        thousands(report.sent_msgs as f64),
        thousands(report.requests as f64),
        thousands(report.received_msgs as f64),
        thousands(report.pulls as f64),
    );
    let _ = write!(out, "  {:<22} {:>10}", "latency", "count");
    for (label, _) in LatencySummary::default().columns() {
        let _ = write!(out, " {label:>10}");
    }
    out.push('\n');
    latency_row(
        &mut out,
        report.request_latency_kind,
        &report.request_latency,
    );
    if let Some(e2e) = &report.e2e_latency {
        latency_row(&mut out, "send -> receive (e2e)", e2e);
    }
    if report.errors.is_empty() {
        out.push_str("  errors: none\n");
    } else {
        out.push_str("  errors:\n");
        for (label, count) in &report.errors {
            let _ = writeln!(out, "    {label:<40} {count}");
        }
    }
    if let Some(cpu) = &report.broker_cpu {
        let _ = writeln!(
            out,
            "  broker cpu: {:.2} s ({:.0}% of a core), {:.2} cpu-us/msg (pids {:?})",
            cpu.cpu_s, cpu.cpu_pct_of_core, cpu.cpu_us_per_msg, cpu.pids
        );
    }
    let _ = writeln!(
        out,
        "  harness cpu: {:.2} s ({:.0}% of a core), {:.2} cpu-us/msg",
        report.client_cpu.cpu_s,
        report.client_cpu.cpu_pct_of_core,
        report.client_cpu.cpu_us_per_msg
    );
    out
}

/// The side-by-side table of a compare run.
pub fn comparison_table(a: &TargetReport, b: &TargetReport, comparison: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "== compare: {} vs {} ({} rounds of {} s each, interleaved) ==",
        a.label, b.label, comparison.rounds, comparison.round_s
    );
    let _ = writeln!(
        out,
        "  {:<24} {:>14} {:>14} {:>10}  direction",
        "metric", a.label, b.label, "A/B"
    );
    for (name, better, va, vb) in comparable(a, b) {
        let show = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
        let r = ratio(va, vb).map_or("-".to_string(), |r| format!("{r:.2}x"));
        let _ = writeln!(
            out,
            "  {name:<24} {:>14} {:>14} {r:>10}  {}",
            show(va),
            show(vb),
            better.words()
        );
    }
    out
}

#[cfg(test)]
mod tests;
