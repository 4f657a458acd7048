//! Runs the workers against one target for a time window, samples them
//! every second, and accumulates the measured part into the target's
//! result. Compare mode runs several windows per target, alternating.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrocket_client::{Connection, MessageQueue};
use tokio::task::JoinHandle;

use crate::args::{Driver, Preload, WorkloadArgs};
use crate::control::Control;
use crate::error::BenchError;
use crate::message::{SendFactory, SendMode};
use crate::meter::{Meter, Tally};
use crate::pacing::{Pacer, Schedule};
use crate::proc_stat::CpuTicks;
use crate::progress::print_progress;
use crate::raw::{spawn_raw_producers, RawPlan};
use crate::recorder::{Counts, Recorder, Sample};
use crate::target::{prepare, Target, TargetSpec};
use crate::workers::{max_offsets, spawn_consumers, spawn_producers, ConsumerPlan, ProducerPlan};

/// How often the window samples its workers.
pub const SAMPLE_INTERVAL_MS: u64 = 1_000;
/// Extra time producers get to finish in-flight requests after a stop.
const STOP_GRACE_MS: u64 = 1_000;
/// Longest preload of consume mode, seconds.
const PRELOAD_S_MAX: u64 = 3_600;
/// Most preload-and-drain rounds of one consume run.
const DRAIN_ROUNDS_MAX: u32 = 1_000;
/// A drain round is not started for less measured time than this.
const DRAIN_LEFT_S_MIN: f64 = 0.05;
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
        if spec.measures_from_start() {
            control.start_measuring();
        }
        let timeout = Duration::from_millis(self.workload.timeout_ms);
        let consumer_tasks = self.start_consumers(spec, timeout, &control, &recorder);
        let (pacer, producer_tasks) = if spec.produce {
            self.start_producers(timeout, &control, &recorder).await?
        } else {
            (None, Vec::new())
        };

        let mut meter = Meter::start(
            self.target.broker_cpu.clone(),
            Duration::from_secs(spec.warmup_s),
            Duration::from_secs(spec.measure_s),
        );
        let mut tally = Tally::default();
        self.sample_until_done(spec, t0, &control, &recorder, &mut meter, &mut tally)
            .await;
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
        tally.absorb(&recorder.drain());
        if spec.e2e && !consumer_tasks.is_empty() {
            self.catch_up(&recorder, &mut tally).await;
        }
        control.stop_consumers();
        join_or_abort(consumer_tasks, Duration::from_millis(200)).await;
        tally.totals.merge(&recorder.drain());

        if spec.record {
            self.result.add_window(&tally.totals, &meter, measure_end);
        }
        Ok(())
    }

    /// Spawns the consumers of a window that consumes (none otherwise).
    fn start_consumers(
        &self,
        spec: &WindowSpec,
        timeout: Duration,
        control: &Arc<Control>,
        recorder: &Recorder,
    ) -> Vec<JoinHandle<()>> {
        let Some(ranges) = &spec.consume else {
            return Vec::new();
        };
        let plan = ConsumerPlan {
            group: self.workload.consumer_group.clone(),
            topic: self.target.topic.clone(),
            pull_batch: self.workload.pull_batch,
            suspend_ms: self.workload.suspend_ms,
            timeout: timeout + Duration::from_millis(self.workload.suspend_ms),
            e2e_run_id: spec.e2e.then_some(self.run_id),
            pop: self.workload.pop,
        };
        spawn_consumers(&self.consumers, ranges, &plan, control, recorder)
    }

    /// Starts the pacer (with `--rate`) and the producers of the workload's
    /// driver.
    async fn start_producers(
        &self,
        timeout: Duration,
        control: &Arc<Control>,
        recorder: &Recorder,
    ) -> Result<(Option<Arc<Pacer>>, Vec<JoinHandle<()>>), BenchError> {
        let pacer = self.start_pacer()?;
        let tasks = match self.workload.driver {
            Driver::Client => {
                let plan = ProducerPlan {
                    factory: self.factory.clone(),
                    mode: self.workload.send_mode,
                    inflight: self.workload.inflight,
                    timeout,
                    pacer: pacer.clone(),
                };
                spawn_producers(&self.producers, &self.queue_ids, &plan, control, recorder)
            }
            Driver::Raw => {
                let plan = RawPlan {
                    factory: self.factory.clone(),
                    inflight: self.workload.inflight,
                    oneway: self.workload.send_mode == SendMode::Oneway,
                    serialize_type: self.target.connection_config.serialize_type,
                    credentials: self.target.connection_config.credentials.clone(),
                    tls: self.target.connection_config.tls.clone(),
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
                    control,
                    recorder,
                )
                .await?
            }
        };
        Ok((pacer, tasks))
    }

    /// The pacing thread of `--rate`, counted in requests.
    fn start_pacer(&self) -> Result<Option<Arc<Pacer>>, BenchError> {
        let Some(rate) = self.workload.rate else {
            return Ok(None);
        };
        let per_request = self.workload.messages_per_request() as f64;
        let schedule = Schedule::from_rate(rate / per_request)
            .ok_or_else(|| BenchError::Options(format!("--rate {rate}")))?;
        Pacer::start(schedule)
            .map(Some)
            .map_err(|e| BenchError::io("pacer thread", e))
    }

    /// Samples the workers every second (or when a worker wakes the window)
    /// until the measured part has run its time, the budget is spent or the
    /// consumers are done.
    async fn sample_until_done(
        &mut self,
        spec: &WindowSpec,
        t0: Instant,
        control: &Control,
        recorder: &Recorder,
        meter: &mut Meter,
        tally: &mut Tally,
    ) {
        let mut ticker = tokio::time::interval_at(
            tokio::time::Instant::from_std(
                meter.window_start + Duration::from_millis(SAMPLE_INTERVAL_MS),
            ),
            Duration::from_millis(SAMPLE_INTERVAL_MS),
        );
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = control.wake.notified() => {}
            }
            let now = Instant::now();
            let interval = recorder.drain();
            tally.count(&interval);
            let broker_now = meter.broker_sample();
            let sample = make_sample(
                &self.target.label,
                t0,
                now,
                meter.last_tick,
                !meter.measuring,
                &interval,
                meter.broker_pct(now, broker_now),
            );
            if !self.quiet {
                print_progress(spec.phase, &sample, spec.e2e);
            }
            if spec.record {
                self.result.samples.push(sample);
            }
            meter.last_tick = now;
            meter.last_broker = broker_now;
            if meter.measuring {
                tally.totals.merge(&interval);
            } else if meter.warmup_over(now) {
                meter.begin_measuring(now, broker_now);
                control.start_measuring();
            }
            if meter.measuring && (meter.measure_over(now) || spec.work_done(control)) {
                break;
            }
        }
    }

    /// E2e: gives consumers time to receive what was sent, up to a deadline.
    async fn catch_up(&self, recorder: &Recorder, tally: &mut Tally) {
        let deadline =
            Instant::now() + Duration::from_millis(self.workload.suspend_ms + CATCH_UP_MS);
        while tally.received < tally.sent && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
            tally.absorb(&recorder.drain());
        }
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
    /// Preloads `preload` messages and drains them, measured; again and
    /// again until `measure_s` seconds of draining are measured (a fast
    /// drain of a small preload would otherwise measure a fraction of a
    /// second), at most [`DRAIN_ROUNDS_MAX`] times.
    pub async fn drain(
        &mut self,
        preload: Preload,
        measure_s: u64,
        t0: Instant,
    ) -> Result<(), BenchError> {
        let before = self.result.measured_s;
        for _ in 0..DRAIN_ROUNDS_MAX {
            let left_s = measure_s as f64 - (self.result.measured_s - before);
            if left_s < DRAIN_LEFT_S_MIN {
                break;
            }
            self.drain_once(preload, left_s.ceil() as u64, t0).await?;
            if preload.messages == 0 {
                break;
            }
        }
        Ok(())
    }

    async fn drain_once(
        &mut self,
        preload: Preload,
        measure_s: u64,
        t0: Instant,
    ) -> Result<(), BenchError> {
        let mut start = self.max_offsets().await?;
        if preload.from_start {
            start.values_mut().for_each(|offset| *offset = 0);
        }
        if preload.messages > 0 {
            let spec = WindowSpec {
                phase: "preload",
                warmup_s: 0,
                measure_s: PRELOAD_S_MAX,
                budget: Some(preload.messages),
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

impl WindowSpec {
    /// Without warm-up, the window measures from its first message.
    fn measures_from_start(&self) -> bool {
        self.warmup_s == 0
    }

    /// The consumers have drained their ranges, or the producers their
    /// budget.
    fn work_done(&self, control: &Control) -> bool {
        let consumers_done = self.consume.is_some() && control.consumers_active() == 0;
        let producers_done = self.produce && control.budget_spent();
        consumers_done || producers_done
    }
}

impl TargetResult {
    /// Adds one window's measured part.
    fn add_window(&mut self, totals: &Counts, meter: &Meter, measure_end: Instant) {
        self.totals.merge(totals);
        self.measured_s += meter.measured_s(measure_end);
        self.windows += 1;
        let (broker_used, client_used) = meter.cpu_used();
        if let Some(used) = broker_used {
            self.broker_cpu = Some(self.broker_cpu.unwrap_or_default().add(&used));
        }
        self.client_cpu = self.client_cpu.add(&client_used);
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
