//! The per-key statistics VIEW_BROKER_STATS_DATA (315) answers and mqadmin's
//! `statsAll` reads (Java's `BrokerStatsManager`, `StatsItem`): for each
//! topic (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE), each topic@group (GROUP_GET_NUMS,
//! GROUP_GET_SIZE) and the cluster (BROKER_PUT_NUMS, BROKER_GET_NUMS), the
//! sums over the last minute, hour and day, their rate and the average per
//! request.
//!
//! Each shard samples its own metrics counters (`services::metrics`, which
//! count always) every 10 s into the minute window (7 samples kept), every
//! 10 min into the hour window (7), every hour into the day window (25),
//! as Java samples. A key's first sample is preceded by a zero one a period
//! earlier, as in Java, so the first window counts everything since the key
//! appeared. A request sums the shards' windows.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};

use super::metrics::Counters;

/// How often the minute window is sampled, and how the hour and day ones
/// follow (every 60th and every 360th sample).
pub(crate) const SAMPLE_INTERVAL_MS: u64 = 10_000;
const HOUR_EVERY: u64 = 60;
const DAY_EVERY: u64 = 360;
/// Samples kept per window, and each window's period.
const WINDOWS: [(usize, u64); 3] = [(7, 10_000), (7, 600_000), (25, 3_600_000)];
/// Most keys one shard samples; past it a key's windows stay empty.
pub(crate) const STATS_KEYS_MAX: usize = 20_000;

/// The stats names the broker answers, and what each counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatsName {
    TopicPutNums,
    TopicPutSize,
    GroupGetNums,
    GroupGetSize,
    BrokerPutNums,
    BrokerGetNums,
}

impl StatsName {
    pub fn parse(name: &str) -> Option<StatsName> {
        Some(match name {
            "TOPIC_PUT_NUMS" => StatsName::TopicPutNums,
            "TOPIC_PUT_SIZE" => StatsName::TopicPutSize,
            "GROUP_GET_NUMS" => StatsName::GroupGetNums,
            "GROUP_GET_SIZE" => StatsName::GroupGetSize,
            "BROKER_PUT_NUMS" => StatsName::BrokerPutNums,
            "BROKER_GET_NUMS" => StatsName::BrokerGetNums,
            _ => return None,
        })
    }

    fn kind(self) -> Kind {
        match self {
            StatsName::TopicPutNums | StatsName::TopicPutSize => Kind::Put,
            StatsName::GroupGetNums | StatsName::GroupGetSize => Kind::Get,
            StatsName::BrokerPutNums => Kind::BrokerPut,
            StatsName::BrokerGetNums => Kind::BrokerGet,
        }
    }

    fn size(self) -> bool {
        matches!(self, StatsName::TopicPutSize | StatsName::GroupGetSize)
    }
}

/// What a key counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Put,
    Get,
    BrokerPut,
    BrokerGet,
}

/// Cumulative figures of one key at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Point {
    at_ms: u64,
    /// Requests (Java's `times`; none for the BROKER_* keys).
    times: u64,
    messages: u64,
    bytes: u64,
}

#[derive(Debug, Default)]
struct Item {
    windows: [VecDeque<Point>; 3],
}

/// One shard's part of a window: summed over the shards by the caller.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Part {
    pub sum: u64,
    pub times: u64,
    /// `sum * 1000 / span`, this shard's rate.
    pub tps: f64,
}

/// A window over every shard (Java's `BrokerStatsItem`).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub(crate) struct Window {
    pub avgpt: f64,
    pub sum: u64,
    pub tps: f64,
}

/// The shards' parts summed per window: sums and rates add, the average
/// per request is the summed sum over the summed requests. `None` when no
/// shard had the key.
pub(crate) fn merge_parts(parts: &[[Part; 3]]) -> Option<[Window; 3]> {
    if parts.is_empty() {
        return None;
    }
    Some(std::array::from_fn(|w| {
        let (sum, times, tps) = parts.iter().fold((0, 0, 0.0), |(s, t, r), p| {
            (s + p[w].sum, t + p[w].times, r + p[w].tps)
        });
        let avgpt = if times == 0 {
            0.0
        } else {
            sum as f64 / times as f64
        };
        Window { avgpt, sum, tps }
    }))
}

/// One shard's samples.
#[derive(Debug, Default)]
pub(crate) struct BrokerStats {
    items: RefCell<HashMap<(Kind, String), Item>>,
    samples: RefCell<u64>,
}

impl BrokerStats {
    /// Takes this tick's samples from `counters` (the shard's, now).
    pub fn sample(&self, counters: &Counters, cluster: &str, now_ms: u64) {
        let tick = {
            let mut samples = self.samples.borrow_mut();
            *samples += 1;
            *samples - 1
        };
        let windows: Vec<usize> = [(0, 1), (1, HOUR_EVERY), (2, DAY_EVERY)]
            .into_iter()
            .filter(|(_, every)| tick.is_multiple_of(*every))
            .map(|(w, _)| w)
            .collect();
        let mut items = self.items.borrow_mut();
        for (kind, key, point) in points(counters, cluster, now_ms) {
            let full = items.len() >= STATS_KEYS_MAX;
            let item = match items.get_mut(&(kind, key.clone())) {
                Some(item) => item,
                None if full => continue,
                None => items.entry((kind, key)).or_default(),
            };
            for &w in &windows {
                push(&mut item.windows[w], w, point);
            }
        }
    }

    /// This shard's minute, hour and day parts of `name` for `key`; `None`
    /// when the shard never counted the key.
    pub fn query(
        &self,
        counters: &Counters,
        cluster: &str,
        name: StatsName,
        key: &str,
    ) -> Option<[Part; 3]> {
        let kind = name.kind();
        if !exists(counters, cluster, kind, key) {
            return None;
        }
        let items = self.items.borrow();
        let Some(item) = items.get(&(kind, key.to_string())) else {
            return Some([Part::default(); 3]);
        };
        Some(
            item.windows
                .each_ref()
                .map(|window| part(window, name.size())),
        )
    }
}

/// Whether `counters` ever counted `key` (topic names and group names have
/// no `@`, so `topic@group` splits at it).
fn exists(counters: &Counters, cluster: &str, kind: Kind, key: &str) -> bool {
    match kind {
        Kind::Put => counters.inbound.contains_key(key),
        Kind::Get => key.split_once('@').is_some_and(|(topic, group)| {
            counters
                .outbound
                .get(group)
                .and_then(|topics| topics.get(topic))
                .is_some_and(|counts| counts[0].calls > 0)
        }),
        Kind::BrokerPut => key == cluster && puts_total(counters, 0).messages > 0,
        Kind::BrokerGet => key == cluster && gets_total(counters, 0).messages > 0,
    }
}

fn push(window: &mut VecDeque<Point>, w: usize, point: Point) {
    let (kept, period_ms) = WINDOWS[w];
    if window.is_empty() {
        // Java's first sample: a zero point one period before.
        let zero = Point {
            at_ms: point.at_ms.saturating_sub(period_ms),
            ..Point::default()
        };
        window.push_back(zero);
    }
    window.push_back(point);
    while window.len() > kept {
        window.pop_front();
    }
}

fn part(window: &VecDeque<Point>, size: bool) -> Part {
    let (Some(first), Some(last)) = (window.front(), window.back()) else {
        return Part::default();
    };
    let value = |p: &Point| if size { p.bytes } else { p.messages };
    let sum = value(last).saturating_sub(value(first));
    let span_ms = last.at_ms.saturating_sub(first.at_ms);
    Part {
        sum,
        times: last.times.saturating_sub(first.times),
        tps: if span_ms == 0 {
            0.0
        } else {
            sum as f64 * 1000.0 / span_ms as f64
        },
    }
}

/// Every key's cumulative figures in `counters`.
fn points<'a>(
    counters: &'a Counters,
    cluster: &'a str,
    at_ms: u64,
) -> impl Iterator<Item = (Kind, String, Point)> + 'a {
    let puts = counters.inbound.iter().map(move |(topic, types)| {
        let point = types.iter().fold(
            Point {
                at_ms,
                ..Point::default()
            },
            |p, t| Point {
                times: p.times + t.size.count,
                messages: p.messages + t.messages,
                bytes: p.bytes + t.bytes,
                at_ms,
            },
        );
        (Kind::Put, topic.clone(), point)
    });
    let gets = counters.outbound.iter().flat_map(move |(group, topics)| {
        topics.iter().map(move |(topic, counts)| {
            let c = counts[0];
            let point = Point {
                at_ms,
                times: c.calls,
                messages: c.messages,
                bytes: c.bytes,
            };
            (Kind::Get, format!("{topic}@{group}"), point)
        })
    });
    let put_total = puts_total(counters, at_ms);
    let get_total = gets_total(counters, at_ms);
    let brokers = [(Kind::BrokerPut, put_total), (Kind::BrokerGet, get_total)]
        .into_iter()
        .filter(|(_, p)| p.messages > 0)
        .map(move |(kind, point)| (kind, cluster.to_string(), point));
    puts.chain(gets).chain(brokers)
}

fn puts_total(counters: &Counters, at_ms: u64) -> Point {
    let messages = counters
        .inbound
        .values()
        .flatten()
        .map(|t| t.messages)
        .sum();
    Point {
        at_ms,
        messages,
        ..Point::default()
    }
}

fn gets_total(counters: &Counters, at_ms: u64) -> Point {
    let messages = counters
        .outbound
        .values()
        .flat_map(|topics| topics.values())
        .flatten()
        .map(|c| c.messages)
        .sum();
    Point {
        at_ms,
        messages,
        ..Point::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::metrics::{MessageType, ShardMetrics};

    #[test]
    fn windows_sum_what_was_counted_since_their_first_sample() {
        let metrics = ShardMetrics::default();
        let stats = BrokerStats::default();
        let at = |s: u64| 1_000_000 + s * 1000;
        assert!(stats
            .query(&metrics.snapshot(), "c", StatsName::TopicPutNums, "T")
            .is_none());
        metrics.count_in("T", MessageType::Normal, 4, 400);
        // Counted, not sampled yet: it exists, with empty windows.
        let early = stats
            .query(&metrics.snapshot(), "c", StatsName::TopicPutNums, "T")
            .unwrap();
        assert_eq!(early, [Part::default(); 3]);
        stats.sample(&metrics.snapshot(), "c", at(0));
        metrics.count_in("T", MessageType::Normal, 2, 200);
        metrics.count_out("G", "T", false, 3, 300);
        stats.sample(&metrics.snapshot(), "c", at(10));
        let counters = metrics.snapshot();
        let [minute, hour, day] = stats
            .query(&counters, "c", StatsName::TopicPutNums, "T")
            .unwrap();
        // Zero point at -10 s, then 4 at 0 s and 6 at 10 s: 6 over 20 s.
        assert_eq!((minute.sum, minute.times), (6, 2));
        assert!((minute.tps - 0.3).abs() < 1e-9, "{minute:?}");
        // The hour and day windows took the first sample only (their
        // zero point is a period before it).
        assert_eq!((hour.sum, day.sum), (4, 4));
        let size = stats
            .query(&counters, "c", StatsName::TopicPutSize, "T")
            .unwrap();
        assert_eq!(size[0].sum, 600);
        let got = stats
            .query(&counters, "c", StatsName::GroupGetNums, "T@G")
            .unwrap();
        assert_eq!((got[0].sum, got[0].times), (3, 1));
        let broker = stats
            .query(&counters, "c", StatsName::BrokerPutNums, "c")
            .unwrap();
        assert_eq!((broker[0].sum, broker[0].times), (6, 0));
        assert!(stats
            .query(&counters, "c", StatsName::GroupGetNums, "T@H")
            .is_none());
    }

    #[test]
    fn the_minute_window_keeps_seven_samples() {
        let metrics = ShardMetrics::default();
        let stats = BrokerStats::default();
        for i in 0..10u64 {
            metrics.count_in("T", MessageType::Normal, 1, 1);
            stats.sample(&metrics.snapshot(), "c", i * 10_000);
        }
        let [minute, ..] = stats
            .query(&metrics.snapshot(), "c", StatsName::TopicPutNums, "T")
            .unwrap();
        // Samples 4..=10 kept: 10 - 4 = 6 messages over 60 s.
        assert_eq!(minute.sum, 6);
        assert!((minute.tps - 0.1).abs() < 1e-9);
    }
}
