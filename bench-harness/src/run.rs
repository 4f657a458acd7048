//! The four modes: set up targets, run windows, write the reports.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::args::{
    CompareArgs, CompareWorkload, ConsumeArgs, OutputArgs, Preload, SingleArgs, WorkloadArgs,
};
use crate::ceiling::{Ceiling, CEILING_THREADS_MAX};
use crate::error::BenchError;
use crate::host;
use crate::message::SendMode;
use crate::report::{
    comparison_table, target_table, CeilingShare, Comparison, Headline, Report, RequestLatency,
    TargetReport,
};
use crate::svg;
use crate::target::TargetSpec;
use crate::window::Session;

/// Offered load of e2e runs without --rate, messages per second: a
/// moderate load, so the latency measured is not queueing at saturation.
pub const E2E_RATE_DEFAULT: f64 = 10_000.0;

/// Which single-target mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SingleMode {
    Produce,
    Consume,
    E2e,
}

impl SingleMode {
    fn name(self) -> &'static str {
        match self {
            SingleMode::Produce => "produce",
            SingleMode::Consume => "consume",
            SingleMode::E2e => "e2e",
        }
    }
}

fn runtime(workload: &WorkloadArgs) -> Result<tokio::runtime::Runtime, BenchError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workload.client_threads())
        .thread_name("bench-client")
        .enable_all()
        .build()
        .map_err(|e| BenchError::io("tokio runtime", e))
}

/// Tells this run's messages apart from any other run's.
fn run_id() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    nanos ^ std::process::id().rotate_left(16)
}

fn spec_of(target: &crate::args::TargetArgs) -> TargetSpec {
    TargetSpec {
        label: target.label.clone(),
        namesrv: target.namesrv.clone(),
        broker_pids: target.broker_pid.clone(),
        broker_pid_children: target.broker_pid_children,
        broker_config: target.broker_config.clone(),
        tls: target.tls,
    }
}

fn request_kind(mode: SingleMode, workload: &WorkloadArgs) -> (RequestLatency, &'static str) {
    match (mode, workload.send_mode) {
        (SingleMode::Consume, _) => (RequestLatency::Pull, "pull round trip"),
        (_, SendMode::Oneway) => (RequestLatency::Send, "oneway enqueue"),
        (_, SendMode::Batch) => (RequestLatency::Send, "batch send ack"),
        (_, SendMode::Sync) => (RequestLatency::Send, "send ack"),
    }
}

fn report_of(
    session: &Session,
    headline: Headline,
    kind: (RequestLatency, &'static str),
    e2e: bool,
) -> TargetReport {
    let target = &session.target;
    let mut report = TargetReport::build(
        &target.label,
        &target.namesrv,
        &target.topic,
        target.queues.len(),
        target.brokers.clone(),
        target.broker_config.clone(),
        &target.broker_cpu.as_ref().map_or_else(Vec::new, |p| {
            p.measured_pids().into_iter().collect::<Vec<_>>()
        }),
        crate::proc_stat::clock_ticks_per_s(),
        &session.result,
        headline,
        kind,
        e2e,
    );
    report.broker = target.broker.clone();
    report
}

/// produce, consume and e2e.
pub fn run_single(mode: SingleMode, args: SingleArgs, preload: Preload) -> Result<(), BenchError> {
    let mut args = args;
    if mode == SingleMode::E2e && args.workload.rate.is_none() {
        args.workload.rate = Some(E2E_RATE_DEFAULT);
    }
    args.workload.validate(mode == SingleMode::E2e)?;
    let parameters = parameters(&args, preload)?;
    let ceiling = start_ceiling(
        mode != SingleMode::Consume,
        mode == SingleMode::E2e,
        &args.workload,
    )?;
    let runtime = runtime(&args.workload)?;
    let (report, ceiling_report) = runtime.block_on(async {
        let t0 = Instant::now();
        crate::message::anchor();
        let spec = spec_of(&args.target);
        let consumers = mode != SingleMode::Produce;
        let mut session = Session::open(
            &spec,
            &args.workload,
            consumers,
            run_id(),
            args.output.quiet,
        )
        .await?;
        let w = &args.workload;
        match mode {
            SingleMode::Produce => session.produce(w.warmup, w.duration, t0).await?,
            SingleMode::E2e => session.e2e(w.warmup, w.duration, t0).await?,
            SingleMode::Consume => session.drain(preload, w.duration, t0).await?,
        }
        let headline = match mode {
            SingleMode::Produce => Headline::Sent,
            SingleMode::Consume | SingleMode::E2e => Headline::Received,
        };
        let kind = request_kind(mode, w);
        let report = report_of(&session, headline, kind, mode == SingleMode::E2e);
        let ceiling_report = match &ceiling {
            Some(ceiling) => {
                let e2e = mode == SingleMode::E2e;
                let c = ceiling_run(ceiling, w, e2e, args.output.quiet, t0).await?;
                Some(report_of(&c, headline, kind, e2e))
            }
            None => None,
        };
        Ok::<_, BenchError>((report, ceiling_report))
    })?;
    println!("{}", target_table(mode.name(), &report));
    let mut targets = vec![report];
    let ceiling = with_ceiling(mode.name(), &mut targets, ceiling_report);
    let report = Report {
        mode: mode.name(),
        parameters,
        host: host::collect(),
        targets,
        comparison: None,
        ceiling,
    };
    let mut workload = args.workload.describe(mode != SingleMode::Produce);
    match mode {
        SingleMode::Consume => {
            workload.push_str(&format!(", preload {}", preload.messages));
            if preload.from_start {
                workload.push_str(", drained from each queue's start");
            }
        }
        _ => workload.push_str(&format!(", {} s measured", args.workload.duration)),
    }
    write_outputs(mode.name(), &args.output, &report, &workload)
}

pub fn run_consume(args: ConsumeArgs) -> Result<(), BenchError> {
    let preload = Preload {
        messages: args.preload,
        from_start: args.from_start,
    };
    run_single(SingleMode::Consume, args.single, preload)
}

/// The same workload on two targets, in alternating rounds.
pub fn run_compare(args: CompareArgs) -> Result<(), BenchError> {
    let mut args = args;
    let e2e = args.workload == CompareWorkload::E2e;
    if e2e && args.workload_args.rate.is_none() {
        args.workload_args.rate = Some(E2E_RATE_DEFAULT);
    }
    args.workload_args.validate(e2e)?;
    if args.rounds == 0 || args.round_secs == 0 {
        return Err(BenchError::Options(
            "--rounds and --round-secs must be at least 1".into(),
        ));
    }
    let parameters = serde_json::to_value(&args)
        .map_err(|e| BenchError::Setup(format!("cannot encode the parameters: {e}")))?;
    let ceiling = start_ceiling(true, e2e, &args.workload_args)?;
    let runtime = runtime(&args.workload_args)?;
    let (a, b, c) = runtime.block_on(compare_rounds(&args, ceiling.as_ref()))?;
    println!("{}", target_table("compare", &a));
    println!("{}", target_table("compare", &b));
    let comparison = Comparison::build(&a, &b, args.rounds, args.round_secs);
    println!("{}", comparison_table(&a, &b, &comparison));
    let mut targets = vec![a, b];
    let ceiling = with_ceiling("compare", &mut targets, c);
    let report = Report {
        mode: "compare",
        parameters,
        host: host::collect(),
        targets,
        comparison: Some(comparison),
        ceiling,
    };
    let workload = format!(
        "{}, {} rounds of {} s each, interleaved",
        args.workload_args.describe(e2e),
        args.rounds,
        args.round_secs
    );
    write_outputs("compare", &args.output, &report, &workload)
}

/// The three reports of a compare run: A, B and the ceiling, if any.
type CompareReports = (TargetReport, TargetReport, Option<TargetReport>);

/// Opens both targets (and the ceiling) and runs the rounds, alternating;
/// their reports.
async fn compare_rounds(
    args: &CompareArgs,
    ceiling: Option<&Ceiling>,
) -> Result<CompareReports, BenchError> {
    let e2e = args.workload == CompareWorkload::E2e;
    let quiet = args.output.quiet;
    let t0 = Instant::now();
    crate::message::anchor();
    let (spec_a, spec_b) = compare_specs(args);
    let w = &args.workload_args;
    let mut a = Session::open(&spec_a, w, e2e, run_id(), quiet).await?;
    let mut b = Session::open(&spec_b, w, e2e, run_id().wrapping_add(1), quiet).await?;
    let mut c = match ceiling {
        Some(ceiling) => Some(open_ceiling(ceiling, w, e2e, quiet).await?),
        None => None,
    };
    for round in 0..args.rounds {
        let warmup = if round == 0 { w.warmup } else { 0 };
        for session in [Some(&mut a), Some(&mut b), c.as_mut()]
            .into_iter()
            .flatten()
        {
            if e2e {
                session.e2e(warmup, args.round_secs, t0).await?;
            } else {
                session.produce(warmup, args.round_secs, t0).await?;
            }
        }
    }
    let headline = if e2e {
        Headline::Received
    } else {
        Headline::Sent
    };
    let kind = request_kind(SingleMode::Produce, w);
    Ok((
        report_of(&a, headline, kind, e2e),
        report_of(&b, headline, kind, e2e),
        c.map(|c| report_of(&c, headline, kind, e2e)),
    ))
}

/// The ceiling for this run, when asked for (`served`: the mode is one it
/// can serve: produce and e2e, not draining a preload; `e2e`: consumers
/// pull what was sent, which the ceiling keeps for single sends only).
fn start_ceiling(served: bool, e2e: bool, w: &WorkloadArgs) -> Result<Option<Ceiling>, BenchError> {
    if !w.with_ceiling {
        return Ok(None);
    }
    if !served {
        return Err(BenchError::Options(
            "--with-ceiling measures produce and e2e runs: the ceiling keeps no preload to drain"
                .into(),
        ));
    }
    if e2e && (w.pop || w.send_mode != SendMode::Sync) {
        return Err(BenchError::Options(
            "--with-ceiling e2e runs need pull consumers and --send-mode sync: the ceiling \
             keeps single sends for pulls (no pop, no oneway, no batches)"
                .into(),
        ));
    }
    if !(1..=CEILING_THREADS_MAX).contains(&w.ceiling_threads) {
        return Err(BenchError::Options(format!(
            "--ceiling-threads must be within 1..={CEILING_THREADS_MAX}"
        )));
    }
    Ceiling::start(w.queues, w.ceiling_threads).map(Some)
}

/// The single-mode workload (produce, or e2e) run against the ceiling.
async fn ceiling_run(
    ceiling: &Ceiling,
    w: &WorkloadArgs,
    e2e: bool,
    quiet: bool,
    t0: Instant,
) -> Result<Session, BenchError> {
    let mut c = open_ceiling(ceiling, w, e2e, quiet).await?;
    if e2e {
        c.e2e(w.warmup, w.duration, t0).await?;
    } else {
        c.produce(w.warmup, w.duration, t0).await?;
    }
    Ok(c)
}

/// A session against the ceiling, its CPU measured.
async fn open_ceiling(
    ceiling: &Ceiling,
    w: &WorkloadArgs,
    consumers: bool,
    quiet: bool,
) -> Result<Session, BenchError> {
    let spec = TargetSpec {
        label: Some("ceiling".into()),
        namesrv: ceiling.addr.clone(),
        broker_pids: vec![ceiling.pid()],
        broker_pid_children: false,
        broker_config: None,
        tls: false,
    };
    Session::open(&spec, w, consumers, run_id().wrapping_add(2), quiet).await
}

/// Prints the ceiling's table and each target's share, and adds its report
/// last.
fn with_ceiling(
    mode: &str,
    targets: &mut Vec<TargetReport>,
    ceiling: Option<TargetReport>,
) -> Option<CeilingShare> {
    let ceiling = ceiling?;
    println!("{}", target_table(mode, &ceiling));
    let share = CeilingShare::build(&ceiling, &targets.iter().collect::<Vec<_>>());
    for line in share.lines() {
        println!("{line}");
    }
    targets.push(ceiling);
    Some(share)
}

/// Targets A and B of a compare run.
fn compare_specs(args: &CompareArgs) -> (TargetSpec, TargetSpec) {
    let spec = |label: &Option<String>, namesrv: &str, pids: &[u32], config: &Option<PathBuf>| {
        TargetSpec {
            label: label.clone(),
            namesrv: namesrv.to_string(),
            broker_pids: pids.to_vec(),
            broker_pid_children: args.broker_pid_children,
            broker_config: config.clone(),
            tls: false,
        }
    };
    let a = spec(
        &args.label_a,
        &args.namesrv_a,
        &args.broker_pid_a,
        &args.broker_config_a,
    );
    let b = spec(
        &args.label_b,
        &args.namesrv_b,
        &args.broker_pid_b,
        &args.broker_config_b,
    );
    (
        TargetSpec {
            tls: args.tls_a,
            ..a
        },
        TargetSpec {
            tls: args.tls_b,
            ..b
        },
    )
}

fn parameters(args: &SingleArgs, preload: Preload) -> Result<serde_json::Value, BenchError> {
    #[derive(Serialize)]
    struct WithPreload<'a> {
        #[serde(flatten)]
        args: &'a SingleArgs,
        preload: u64,
        from_start: bool,
    }
    let preload_messages = preload.messages;
    serde_json::to_value(WithPreload {
        args,
        preload: preload_messages,
        from_start: preload.from_start,
    })
    .map_err(|e| BenchError::Setup(format!("cannot encode the parameters: {e}")))
}

fn write_outputs(
    mode: &str,
    output: &OutputArgs,
    report: &Report,
    workload: &str,
) -> Result<(), BenchError> {
    let dir = output.out.clone().unwrap_or_else(|| {
        Path::new("target")
            .join("bench")
            .join(format!("{mode}-{}", report.host.started_unix_s))
    });
    std::fs::create_dir_all(&dir).map_err(|e| BenchError::io(dir.display().to_string(), e))?;
    let json_path = dir.join("report.json");
    let json = serde_json::to_string_pretty(report)
        .map_err(|e| BenchError::Setup(format!("cannot encode the report: {e}")))?;
    std::fs::write(&json_path, json)
        .map_err(|e| BenchError::io(json_path.display().to_string(), e))?;
    let labels: Vec<&str> = report.targets.iter().map(|t| t.label.as_str()).collect();
    let title = format!("ferrocket-bench {mode}: {}", labels.join(" vs "));
    let subtitle = report.host.subtitle();
    let targets: Vec<&TargetReport> = report.targets.iter().collect();
    let mut header = vec![subtitle, workload.to_string()];
    header.extend(targets.iter().map(|t| crate::report::headline_line(t)));
    let svg_path = dir.join("report.svg");
    std::fs::write(&svg_path, svg::render(&title, &header, &targets))
        .map_err(|e| BenchError::io(svg_path.display().to_string(), e))?;
    println!(
        "reports: {} and {}",
        json_path.display(),
        svg_path.display()
    );
    Ok(())
}
