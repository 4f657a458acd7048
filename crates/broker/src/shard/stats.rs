//! The broker's counters: each shard's, summed over the shards, and the
//! messages-per-second rates shard 0 samples from them.

use std::rc::Rc;
use std::time::{Duration, Instant};

use ferrocket_runtime::shard::ShardCall;

use crate::services::broker_stats::{merge_parts, Part, StatsName, Window};
use crate::services::throughput::{Mornings, Sample, THROUGHPUT_SAMPLE_INTERVAL_MS};
use crate::shard::{Shard, ShardStats};

/// On every shard: its counters.
#[derive(Clone)]
pub(crate) struct Stats;

impl ShardCall<Shard> for Stats {
    type Reply = ShardStats;

    async fn run(self, shard: Rc<Shard>) -> ShardStats {
        let mut stats = shard.stats().get();
        stats.held_pulls = shard.polls().held_count() as u64;
        stats
    }
}

/// Every shard's counters, summed (a shard that cannot answer counts 0).
pub(crate) async fn broker_totals(shard: &Rc<Shard>) -> ShardStats {
    sum(shard.call_all(Stats).await.into_iter().flatten())
}

fn sum(all: impl Iterator<Item = ShardStats>) -> ShardStats {
    let mut total = ShardStats::default();
    for stats in all {
        total.put_messages += stats.put_messages;
        total.put_bytes += stats.put_bytes;
        total.got_messages += stats.got_messages;
        total.held_pulls += stats.held_pulls;
        total.skipped_redeliveries += stats.skipped_redeliveries;
    }
    total
}

/// On shard 0: (`putTps`, `getTransferedTps`) as runtime info reports them.
pub(crate) struct Rates;

impl ShardCall<Shard> for Rates {
    type Reply = (String, String);

    async fn run(self, shard: Rc<Shard>) -> (String, String) {
        match shard.control_plane() {
            Some(control) => control.throughput.borrow().report(),
            None => Default::default(),
        }
    }
}

/// On shard 0: the day's first totals (`msgPutTotalTodayMorning`, ...).
pub(crate) struct MorningTotals;

impl ShardCall<Shard> for MorningTotals {
    type Reply = Mornings;

    async fn run(self, shard: Rc<Shard>) -> Mornings {
        match shard.control_plane() {
            Some(control) => control.throughput.borrow().mornings,
            None => Mornings::default(),
        }
    }
}

const DAY_MS: i64 = 86_400_000;

/// Shard 0's loop: samples the broker's counters once a second.
pub(crate) async fn throughput_sample_loop(shard: Rc<Shard>) {
    let interval = Duration::from_millis(THROUGHPUT_SAMPLE_INTERVAL_MS);
    // Monotonic: a wall clock stepped back must not reorder samples.
    let started = Instant::now();
    loop {
        // A sample missing a shard would read as a drop, then a jump.
        let replies = shard.call_all(Stats).await.into_iter();
        let answers: Option<Vec<ShardStats>> = replies.map(Result::ok).collect();
        let Some(control) = shard.control_plane() else {
            return;
        };
        if let Some(answers) = answers {
            let total = sum(answers.into_iter());
            let mut throughput = control.throughput.borrow_mut();
            throughput.push(Sample {
                at_ms: started.elapsed().as_millis() as u64,
                put_messages: total.put_messages,
                got_messages: total.got_messages,
            });
            let day = crate::clock::now_ms().div_euclid(DAY_MS);
            throughput
                .mornings
                .observe(day, total.put_messages, total.got_messages);
        }
        if shard.stopping().interrupts_sleep(interval).await {
            return;
        }
    }
}

/// Every shard's loop: samples its counters into the stats windows
/// (`services::broker_stats`) every 10 s, the first at once.
pub(crate) async fn broker_stats_sample_loop(shard: Rc<Shard>) {
    let interval = Duration::from_millis(crate::services::broker_stats::SAMPLE_INTERVAL_MS);
    loop {
        let cluster = shard.config().broker_cluster_name.clone();
        let now = crate::clock::now_ms().max(0) as u64;
        shard
            .metrics()
            .with(|counters| shard.broker_stats().sample(counters, &cluster, now));
        if shard.stopping().interrupts_sleep(interval).await {
            return;
        }
    }
}

/// On every shard: its part of one stats item's windows.
#[derive(Clone)]
struct StatsQuery {
    name: StatsName,
    key: String,
}

impl ShardCall<Shard> for StatsQuery {
    type Reply = Option<[Part; 3]>;

    async fn run(self, shard: Rc<Shard>) -> Option<[Part; 3]> {
        let cluster = shard.config().broker_cluster_name.clone();
        shard.metrics().with(|counters| {
            shard
                .broker_stats()
                .query(counters, &cluster, self.name, &self.key)
        })
    }
}

/// The item's minute, hour and day windows over every shard; `None` when
/// no shard has counted the key.
pub(crate) async fn stats_windows(
    shard: &Shard,
    name: StatsName,
    key: &str,
) -> Option<[Window; 3]> {
    let query = StatsQuery {
        name,
        key: key.to_string(),
    };
    let parts: Vec<[Part; 3]> = shard
        .call_all(query)
        .await
        .into_iter()
        .filter_map(|answer| answer.ok().flatten())
        .collect();
    merge_parts(&parts)
}

/// The summed minute rate of GROUP_GET_NUMS of `group` over `topics`
/// (a ConsumeStats' `consumeTps`).
pub(crate) async fn group_get_tps<'a>(
    shard: &Shard,
    group: &str,
    topics: impl Iterator<Item = &'a String>,
) -> f64 {
    let mut tps = 0.0;
    for topic in topics {
        let key = format!("{topic}@{group}");
        if let Some([minute, ..]) = stats_windows(shard, StatsName::GroupGetNums, &key).await {
            tps += minute.tps;
        }
    }
    tps
}
