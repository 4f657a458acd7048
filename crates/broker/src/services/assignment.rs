//! Server-side load balancing (Java's `QueryAssignmentProcessor.
//! doLoadBalance`): which of a topic's queues, over every broker of its
//! route, one consumer of a group takes. Broadcasting consumers take every
//! queue; clustering ones share them with the group's consumers known
//! here, by the strategy they name (AVG, AVG_BY_CIRCLE). In POP mode with
//! no share count (`popShareQueueNum` ≤ 0, or at least the consumers but
//! one) every consumer pops every broker's queues (queue id -1 per
//! broker); otherwise each pops its own share and that of the next
//! `popShareQueueNum` consumers.

/// A queue of a broker (`MessageQueue`; the topic is the caller's).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Queue {
    pub broker_name: String,
    pub queue_id: i32,
}

/// The allocation strategies Java's processor registers, by `getName()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strategy {
    Averagely,
    AveragelyByCircle,
}

impl Strategy {
    /// `None` for a strategy the broker does not run (Java answers no
    /// assignment for those); none named is AVG.
    pub fn parse(name: Option<&str>) -> Option<Strategy> {
        match name.map(str::trim).unwrap_or("") {
            "" | "AVG" => Some(Strategy::Averagely),
            "AVG_BY_CIRCLE" => Some(Strategy::AveragelyByCircle),
            _ => None,
        }
    }

    /// `me`'s queues of the sorted `queues` among the sorted `cids`.
    pub fn allocate(self, queues: &[Queue], cids: &[String], me: &str) -> Vec<Queue> {
        let Some(index) = cids.iter().position(|c| c == me) else {
            return Vec::new();
        };
        let (len, count) = (queues.len(), cids.len());
        match self {
            Strategy::Averagely => {
                let modulo = len % count;
                let size = if len <= count {
                    1
                } else if modulo > 0 && index < modulo {
                    len / count + 1
                } else {
                    len / count
                };
                let start = if modulo > 0 && index < modulo {
                    index * size
                } else {
                    index * size + modulo
                };
                queues
                    .iter()
                    .skip(start)
                    .take(size.min(len.saturating_sub(start)))
                    .cloned()
                    .collect()
            }
            Strategy::AveragelyByCircle => {
                queues.iter().skip(index).step_by(count).cloned().collect()
            }
        }
    }
}

/// POP mode's queues for `me` (Java's `allocate4Pop`).
pub(crate) fn allocate_for_pop(
    strategy: Strategy,
    queues: &[Queue],
    cids: &[String],
    me: &str,
    share: i32,
) -> Vec<Queue> {
    if share <= 0 || share as usize >= cids.len().saturating_sub(1) {
        let mut brokers: Vec<Queue> = queues
            .iter()
            .map(|q| Queue {
                broker_name: q.broker_name.clone(),
                queue_id: -1,
            })
            .collect();
        brokers.dedup();
        return brokers;
    }
    let Some(index) = cids.iter().position(|c| c == me) else {
        return Vec::new();
    };
    if cids.len() > queues.len() {
        // More consumers than queues: each gets one, round the list.
        return queues
            .get(index % queues.len())
            .cloned()
            .into_iter()
            .collect();
    }
    let mut mine = strategy.allocate(queues, cids, me);
    for step in 1..=share as usize {
        let next = &cids[(index + step) % cids.len()];
        mine.extend(strategy.allocate(queues, cids, next));
    }
    mine
}

/// How long a topic's queues from the name servers are reused (Java's
/// `TopicRouteInfoManager` refreshes every 30 s).
pub(crate) const ROUTE_TTL_MS: u64 = 30_000;
/// Most topics whose queues are kept; past it the cache starts again.
const ROUTES_MAX: usize = 10_000;

/// Shard 0's copy of topics' queues over every broker, by topic.
#[derive(Debug, Default)]
pub(crate) struct RouteCache {
    routes: std::collections::HashMap<String, (std::time::Instant, Vec<Queue>)>,
}

impl RouteCache {
    pub fn get(&self, topic: &str) -> Option<Vec<Queue>> {
        let (at, queues) = self.routes.get(topic)?;
        (at.elapsed().as_millis() < u128::from(ROUTE_TTL_MS)).then(|| queues.clone())
    }

    pub fn put(&mut self, topic: &str, queues: Vec<Queue>) {
        if self.routes.len() >= ROUTES_MAX {
            self.routes.clear();
        }
        self.routes
            .insert(topic.to_string(), (std::time::Instant::now(), queues));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues(spec: &[(&str, i32)]) -> Vec<Queue> {
        let mut all: Vec<Queue> = spec
            .iter()
            .flat_map(|(broker, n)| {
                (0..*n).map(|queue_id| Queue {
                    broker_name: broker.to_string(),
                    queue_id,
                })
            })
            .collect();
        all.sort();
        all
    }

    fn ids(list: &[Queue]) -> Vec<String> {
        list.iter()
            .map(|q| format!("{}-{}", q.broker_name, q.queue_id))
            .collect()
    }

    #[test]
    fn strategies_share_as_javas_do() {
        let all = queues(&[("a", 4), ("b", 4)]);
        let cids: Vec<String> = ["c1", "c2", "c3"].map(String::from).to_vec();
        let avg = Strategy::Averagely;
        assert_eq!(ids(&avg.allocate(&all, &cids, "c1")), ["a-0", "a-1", "a-2"]);
        assert_eq!(ids(&avg.allocate(&all, &cids, "c2")), ["a-3", "b-0", "b-1"]);
        assert_eq!(ids(&avg.allocate(&all, &cids, "c3")), ["b-2", "b-3"]);
        assert!(avg.allocate(&all, &cids, "zz").is_empty());
        let circle = Strategy::AveragelyByCircle;
        assert_eq!(
            ids(&circle.allocate(&all, &cids, "c2")),
            ["a-1", "b-0", "b-3"]
        );
        assert_eq!(Strategy::parse(Some("CONSISTENT_HASH")), None);
        assert_eq!(Strategy::parse(None), Some(Strategy::Averagely));
    }

    #[test]
    fn pop_takes_every_broker_or_a_share() {
        let all = queues(&[("a", 4), ("b", 4)]);
        let cids: Vec<String> = ["c1", "c2", "c3", "c4"].map(String::from).to_vec();
        let avg = Strategy::Averagely;
        assert_eq!(
            ids(&allocate_for_pop(avg, &all, &cids, "c1", -1)),
            ["a--1", "b--1"]
        );
        assert_eq!(
            ids(&allocate_for_pop(avg, &all, &cids, "c1", 3)),
            ["a--1", "b--1"]
        );
        // Share 1: c4's own two queues and the next consumer's (c1's).
        assert_eq!(
            ids(&allocate_for_pop(avg, &all, &cids, "c4", 1)),
            ["b-2", "b-3", "a-0", "a-1"]
        );
        let many: Vec<String> = (0..10).map(|i| format!("c{i:02}")).collect();
        assert_eq!(ids(&allocate_for_pop(avg, &all, &many, "c09", 1)), ["a-1"]);
    }
}
