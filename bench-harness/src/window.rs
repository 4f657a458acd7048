//! Runs the workers against one target for a time window, samples them
//! every second, and accumulates the measured part into the target's
//! result. Compare mode runs several windows per target, alternating.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrocket_client::{Connection, MessageQueue};
use tokio::task::JoinHandle;

use crate::args::{Driver, SendMode, WorkloadArgs};
use crate::control::Control;
use crate::error::BenchError;
use crate::message::SendFactory;
use crate::pacing::{Pacer, Schedule};
use crate::proc_stat::{CpuProbe, CpuTicks};
use crate::progress::print_progress;
use crate::raw::{spawn_raw_producers, RawPlan};
use crate::recorder::{Counts, Recorder, Sample};
use crate::target::{prepare, Target, TargetSpec};
use crate::workers::{max_offsets, spawn_consumers, spawn_producers, ConsumerPlan, ProducerPlan};

/// How often the window samples its workers.
pub const SAMPLE_INTERVAL_MS: u64 = 1_000;
/// A tick this close to a phase boundary counts as reaching it.
const BOUNDARY_SLACK_MS: u64 = 20;
/// Extra time producers get to finish in-flight requests after a stop.
const STOP_GRACE_MS: u64 = 1_000;
/// Longest preload of consume mode, seconds.
const PRELOAD_S_MAX: u64 = 3_600;
/// How long e2e consumers may catch up after producers stopped, beyond the
/// long-poll time.
const CATCH_UP_MS: u64 = 2_000;

/// Everything measured on one target, over all its windows.
#[derive(Debug, Clone, Default)]
pub struct TargetResult {
    pub totals: Counts,
    /// Measured seconds, summed over windows.
    pub measured_s: f64,
    pub broker_cpu: Option<CpuTicks>,
    pub client_cpu: CpuTicks,
    pub samples: Vec<Sample>,
    pub windows: u32,
}

/// What one window runs.
#[derive(Debug, Clone)]
pub struct WindowSpec {
    /// Shown in the progress line.
    pub phase: &'static str,
    pub warmup_s: u64,
    pub measure_s: u64,
    pub budget: Option<u64>,
    pub produce: bool,
    /// Queues to consume: start offset and optional end offset.
    pub consume: Option<BTreeMap<MessageQueue, (i64, Option<i64>)>>,
    /// Record the e2e latency of this run's messages.
    pub e2e: bool,
    /// Add the measured part to the result (false for preloading).
    pub record: bool,
}

/// A connected target with its workload.
pub struct Session {
    pub target: Target,
    pub workload: WorkloadArgs,
    pub result: TargetResult,
    producers: Vec<(String, Connection)>,
    consumers: Vec<(String, Connection)>,
    queue_ids: BTreeMap<String, Vec<i32>>,
    factory: Arc<SendFactory>,
    run_id: u32,
    quiet: bool,
}

impl Session {
    /// Prepares the target and opens producer (and consumer) connections.
    pub async fn open(
        spec: &TargetSpec,
        workload: &WorkloadArgs,
        with_consumers: bool,
        run_id: u32,
        quiet: bool,
    ) -> Result<Session, BenchError> {
        let target = prepare(spec, workload).await?;
        let producers = match workload.driver {
            Driver::Client => target.connect(workload.connections).await?,
            // The raw driver opens its own connections in each window.
            Driver::Raw => Vec::new(),
        };
        let consumers = if with_consumers {
            target.connect(workload.consumer_connections).await?
        } else {
            Vec::new()
        };
        let mut queue_ids: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for queue in &target.queues {
            queue_ids
                .entry(queue.broker_name.clone())
                .or_default()
                .push(queue.queue_id);
        }
        let per_broker = queue_ids.values().map(Vec::len).max().unwrap_or(1);
        let factory = Arc::new(SendFactory::new(
            &target.topic,
            &workload.producer_group,
            i32::try_from(per_broker).unwrap_or(i32::MAX),
            workload.send_mode,
            workload.messages_per_request(),
            workload.size,
            run_id,
        ));
        Ok(Session {
            target,
            workload: workload.clone(),
            result: TargetResult::default(),
            producers,
            consumers,
            queue_ids,
            factory,
            run_id,
            quiet,
        })
    }

    /// Current max offset of every queue.
    pub async fn max_offsets(&self) -> Result<BTreeMap<MessageQueue, i64>, BenchError> {
        let connections = if self.consumers.is_empty() {
            &self.producers
        } else {
            &self.consumers
        };
        max_offsets(connections, &self.target.queues).await
    }

    /// Runs one window; `t0` is the start of the whole run (for the plot).
    pub async fn run_window(&mut self, spec: &WindowSpec, t0: Instant) -> Result<(), BenchError> {
        let recorder = Recorder::new();
        let control = Arc::new(Control::new(spec.budget));
        // Without warm-up, the budget counts from the first message.
        let mut measuring = spec.warmup_s == 0;
        if measuring {
            control.start_measuring();
        }
        let timeout = Duration::from_millis(self.workload.timeout_ms);
        let mut consumer_tasks = Vec::new();
        if let Some(ranges) = &spec.consume {
            let plan = ConsumerPlan {
                group: self.workload.consumer_group.clone(),
                topic: self.target.topic.clone(),
                pull_batch: self.workload.pull_batch,
                suspend_ms: self.workload.suspend_ms,
                timeout: timeout + Duration::from_millis(self.workload.suspend_ms),
                e2e_run_id: spec.e2e.then_some(self.run_id),
            };
            consumer_tasks = spawn_consumers(&self.consumers, ranges, &plan, &control, &recorder);
        }
        let mut pacer = None;
        let mut producer_tasks = Vec::new();
        if spec.produce {
            let per_request = self.workload.messages_per_request() as f64;
            if let Some(rate) = self.workload.rate {
                let schedule = Schedule::from_rate(rate / per_request)
                    .ok_or_else(|| BenchError::Options(format!("--rate {rate}")))?;
                pacer =
                    Some(Pacer::start(schedule).map_err(|e| BenchError::io("pacer thread", e))?);
            }
            producer_tasks = match self.workload.driver {
                Driver::Client => {
                    let plan = ProducerPlan {
                        factory: self.factory.clone(),
                        mode: self.workload.send_mode,
                        inflight: self.workload.inflight,
                        timeout,
                        pacer: pacer.clone(),
                    };
                    spawn_producers(&self.producers, &self.queue_ids, &plan, &control, &recorder)
                }
                Driver::Raw => {
                    let plan = RawPlan {
                        factory: self.factory.clone(),
                        inflight: self.workload.inflight,
                        oneway: self.workload.send_mode == SendMode::Oneway,
                        serialize_type: self.target.connection_config.serialize_type,
                        timeout,
                        pacer: pacer.clone(),
                    };
                    let brokers = &self.target.brokers;
                    let per_broker = self.workload.connections;
                    spawn_raw_producers(
                        brokers,
                        &self.queue_ids,
                        per_broker,
                        &plan,
                        &control,
                        &recorder,
                    )
                    .await?
                }
            };
        }

        let broker_probe = self.target.broker_cpu.clone();
        let client_probe = CpuProbe::this_process();
        let window_start = Instant::now();
        let slack = Duration::from_millis(BOUNDARY_SLACK_MS);
        let warmup = Duration::from_secs(spec.warmup_s);
        let measure = Duration::from_secs(spec.measure_s);
        let mut measure_start = window_start;
        let mut cpu_start = (
            broker_probe.as_ref().map(CpuProbe::sample),
            client_probe.sample(),
        );
        let mut last_tick = window_start;
        let mut last_broker = cpu_start.0;
        let mut totals = Counts::default();
        let mut ticker = tokio::time::interval_at(
            tokio::time::Instant::from_std(
                window_start + Duration::from_millis(SAMPLE_INTERVAL_MS),
            ),
            Duration::from_millis(SAMPLE_INTERVAL_MS),
        );
        let mut all_sent = 0u64;
        let mut all_received = 0u64;
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = control.wake.notified() => {}
            }
            let now = Instant::now();
            let interval = recorder.drain();
            all_sent += interval.sent_msgs;
            all_received += interval.received_msgs;
            let broker_now = broker_probe.as_ref().map(CpuProbe::sample);
            let broker_pct = match (&broker_probe, last_broker, broker_now) {
                (Some(probe), Some(before), Some(after)) => {
                    let dt = now
                        .saturating_duration_since(last_tick)
                        .as_secs_f64()
                        .max(1e-9);
                    Some(100.0 * probe.seconds(after.saturating_sub(&before).total()) / dt)
                }
                _ => None,
            };
            let sample = make_sample(
                &self.target.label,
                t0,
                now,
                last_tick,
                !measuring,
                &interval,
                broker_pct,
            );
            if !self.quiet {
                print_progress(spec.phase, &sample, spec.e2e);
            }
            if spec.record {
                self.result.samples.push(sample);
            }
            last_tick = now;
            last_broker = broker_now;
            if measuring {
                totals.merge(&interval);
            } else if now + slack >= window_start + warmup {
                measuring = true;
                measure_start = now;
                cpu_start = (broker_now, client_probe.sample());
                control.start_measuring();
            }
            let consumers_done = spec.consume.is_some() && control.consumers_active() == 0;
            let producers_done = spec.produce && control.budget_spent();
            if measuring
                && (now + slack >= measure_start + measure || consumers_done || producers_done)
            {
                break;
            }
        }
        let measure_end = Instant::now();
        control.stop_producers();
        if let Some(pacer) = &pacer {
            pacer.stop();
        }
        join_or_abort(
            producer_tasks,
            timeout + Duration::from_millis(STOP_GRACE_MS),
        )
        .await;
        let late = recorder.drain();
        all_sent += late.sent_msgs;
        all_received += late.received_msgs;
        totals.merge(&late);
        if spec.e2e && !consumer_tasks.is_empty() {
            let deadline =
                Instant::now() + Duration::from_millis(self.workload.suspend_ms + CATCH_UP_MS);
            while all_received < all_sent && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let more = recorder.drain();
                all_sent += more.sent_msgs;
                all_received += more.received_msgs;
                totals.merge(&more);
            }
        }
        control.stop_consumers();
        join_or_abort(consumer_tasks, Duration::from_millis(200)).await;
        totals.merge(&recorder.drain());

        if spec.record {
            let result = &mut self.result;
            result.totals.merge(&totals);
            result.measured_s += measure_end
                .saturating_duration_since(measure_start)
                .as_secs_f64();
            result.windows += 1;
            if let (Some(probe), Some(before)) = (&broker_probe, cpu_start.0) {
                let used = probe.sample().saturating_sub(&before);
                result.broker_cpu = Some(result.broker_cpu.unwrap_or_default().add(&used));
            }
            let used = client_probe.sample().saturating_sub(&cpu_start.1);
            result.client_cpu = result.client_cpu.add(&used);
        }
        Ok(())
    }

    /// Produce mode (one window, or one compare round).
    pub async fn produce(
        &mut self,
        warmup_s: u64,
        measure_s: u64,
        t0: Instant,
    ) -> Result<(), BenchError> {
        let spec = WindowSpec {
            phase: "produce",
            warmup_s,
            measure_s,
            budget: self.workload.messages,
            produce: true,
            consume: None,
            e2e: false,
            record: true,
        };
        self.run_window(&spec, t0).await
    }

    /// E2e mode: consumers start at the queues' current ends, then
    /// producers start.
    pub async fn e2e(
        &mut self,
        warmup_s: u64,
        measure_s: u64,
        t0: Instant,
    ) -> Result<(), BenchError> {
        let ranges = self
            .max_offsets()
            .await?
            .into_iter()
            .map(|(queue, offset)| (queue, (offset, None)))
            .collect();
        let spec = WindowSpec {
            phase: "e2e",
            warmup_s,
            measure_s,
            budget: self.workload.messages,
            produce: true,
            consume: Some(ranges),
            e2e: true,
            record: true,
        };
        self.run_window(&spec, t0).await
    }

    /// Consume mode: produce `preload` messages (unmeasured), then measure
    /// pulling them back from where the preload started.
    pub async fn drain(
        &mut self,
        preload: u64,
        measure_s: u64,
        t0: Instant,
    ) -> Result<(), BenchError> {
        let start = self.max_offsets().await?;
        if preload > 0 {
            let spec = WindowSpec {
                phase: "preload",
                warmup_s: 0,
                measure_s: PRELOAD_S_MAX,
                budget: Some(preload),
                produce: true,
                consume: None,
                e2e: false,
                record: false,
            };
            let saved_rate = self.workload.rate.take();
            let outcome = self.run_window(&spec, t0).await;
            self.workload.rate = saved_rate;
            outcome?;
        }
        let end = self.max_offsets().await?;
        let ranges = start
            .into_iter()
            .map(|(queue, from)| {
                let to = end.get(&queue).copied().unwrap_or(from);
                (queue, (from, Some(to)))
            })
            .filter(|(_, (from, to))| to.is_some_and(|to| to > *from))
            .collect::<BTreeMap<_, _>>();
        if ranges.is_empty() {
            return Err(BenchError::Setup(
                "nothing to consume: the preload left every queue empty".into(),
            ));
        }
        let spec = WindowSpec {
            phase: "consume",
            warmup_s: 0,
            measure_s,
            budget: None,
            produce: false,
            consume: Some(ranges),
            e2e: false,
            record: true,
        };
        self.run_window(&spec, t0).await
    }
}

fn make_sample(
    label: &str,
    t0: Instant,
    now: Instant,
    last: Instant,
    warmup: bool,
    interval: &Counts,
    broker_cpu_pct: Option<f64>,
) -> Sample {
    let dt = now.saturating_duration_since(last).as_secs_f64().max(1e-9);
    let bytes = interval.sent_bytes.max(interval.received_bytes);
    Sample {
        t_s: now.saturating_duration_since(t0).as_secs_f64(),
        target: label.to_string(),
        warmup,
        sent_per_s: interval.sent_msgs as f64 / dt,
        received_per_s: interval.received_msgs as f64 / dt,
        mb_per_s: bytes as f64 / dt / 1e6,
        errors: interval.error_total(),
        request_p99_us: if interval.send_latency.is_empty() {
            interval.pull_latency.percentile_ns(99.0) as f64 / 1_000.0
        } else {
            interval.send_latency.percentile_ns(99.0) as f64 / 1_000.0
        },
        e2e_p99_us: interval.e2e_latency.percentile_ns(99.0) as f64 / 1_000.0,
        broker_cpu_pct,
    }
}

/// Waits for each task up to a shared deadline, then aborts the rest.
async fn join_or_abort(tasks: Vec<JoinHandle<()>>, grace: Duration) {
    let deadline = tokio::time::Instant::now() + grace;
    for mut task in tasks {
        if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
            task.abort();
        }
    }
}
