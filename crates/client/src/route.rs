//! Message queues and what a topic route says about them (Java's
//! `MessageQueue`, `TopicPublishInfo`, and the subscribe-side queue set).

use ferrocket_protocol::body::{perm, TopicRouteData};

/// One queue of a topic on one broker set.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageQueue {
    pub topic: String,
    pub broker_name: String,
    pub queue_id: i32,
}

impl MessageQueue {
    pub fn new(topic: impl Into<String>, broker_name: impl Into<String>, queue_id: i32) -> Self {
        Self {
            topic: topic.into(),
            broker_name: broker_name.into(),
            queue_id,
        }
    }
}

impl std::fmt::Display for MessageQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}#{}", self.topic, self.broker_name, self.queue_id)
    }
}

fn has_master(route: &TopicRouteData, broker_name: &str) -> bool {
    route
        .broker_datas
        .iter()
        .any(|b| b.broker_name == broker_name && b.master_addr().is_some())
}

/// Queues a producer may write to: every writable broker with a master,
/// queue ids `0..writeQueueNums`, ordered by broker name then queue id.
pub fn write_queues(topic: &str, route: &TopicRouteData) -> Vec<MessageQueue> {
    queues(topic, route, true, usize::MAX)
}

/// Like [`write_queues`] but at most `per_broker_max` queues per broker (the
/// auto-create fallback limits TBW102's queues to `defaultTopicQueueNums`).
pub fn write_queues_limited(
    topic: &str,
    route: &TopicRouteData,
    per_broker_max: usize,
) -> Vec<MessageQueue> {
    queues(topic, route, true, per_broker_max)
}

/// Queues a consumer reads: every readable broker, ids `0..readQueueNums`.
pub fn read_queues(topic: &str, route: &TopicRouteData) -> Vec<MessageQueue> {
    queues(topic, route, false, usize::MAX)
}

fn queues(
    topic: &str,
    route: &TopicRouteData,
    write: bool,
    per_broker_max: usize,
) -> Vec<MessageQueue> {
    let mut out = Vec::new();
    let mut datas: Vec<_> = route.queue_datas.iter().collect();
    datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    for data in datas {
        let (allowed, count) = if write {
            (
                perm::is_writeable(data.perm) && has_master(route, &data.broker_name),
                data.write_queue_nums,
            )
        } else {
            (perm::is_readable(data.perm), data.read_queue_nums)
        };
        if !allowed {
            continue;
        }
        let count = usize::try_from(count).unwrap_or(0).min(per_broker_max);
        for queue_id in 0..count {
            out.push(MessageQueue::new(topic, &data.broker_name, queue_id as i32));
        }
    }
    out
}

/// The master address of `broker_name` in `route`.
pub fn master_addr<'a>(route: &'a TopicRouteData, broker_name: &str) -> Option<&'a str> {
    route
        .broker_datas
        .iter()
        .find(|b| b.broker_name == broker_name)
        .and_then(|b| b.master_addr())
}

/// Splits a name server list "h:p;h:p" (spaces and empty entries ignored).
pub fn parse_addr_list(list: &str) -> Vec<String> {
    list.split(';')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTE: &str = r#"{"queueDatas":[
        {"brokerName":"b2","readQueueNums":2,"writeQueueNums":1,"perm":6,"topicSysFlag":0},
        {"brokerName":"b1","readQueueNums":"3","writeQueueNums":"3","perm":6},
        {"brokerName":"b3","readQueueNums":2,"writeQueueNums":2,"perm":4}],
      "brokerDatas":[
        {"cluster":"c","brokerName":"b1","brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"}},
        {"cluster":"c","brokerName":"b2","brokerAddrs":{"0":"127.0.0.1:10912"}},
        {"cluster":"c","brokerName":"b3","brokerAddrs":{"0":"127.0.0.1:10913"}}]}"#;

    fn route() -> TopicRouteData {
        ferrocket_protocol::body::decode_json(ROUTE.as_bytes()).unwrap()
    }

    #[test]
    fn write_queues_skip_read_only_brokers_and_sort() {
        let queues = write_queues("T", &route());
        let names: Vec<String> = queues.iter().map(|q| q.to_string()).collect();
        assert_eq!(names, ["T@b1#0", "T@b1#1", "T@b1#2", "T@b2#0"]);
        let limited = write_queues_limited("New", &route(), 2);
        assert_eq!(limited.len(), 3);
        assert!(limited.iter().all(|q| q.topic == "New"));
    }

    #[test]
    fn read_queues_use_read_counts() {
        let queues = read_queues("T", &route());
        assert_eq!(queues.len(), 3 + 2 + 2);
        assert_eq!(queues[3], MessageQueue::new("T", "b2", 0));
    }

    #[test]
    fn write_queues_need_a_master() {
        let mut route = route();
        route.broker_datas[1].broker_addrs.remove(&0);
        assert!(write_queues("T", &route)
            .iter()
            .all(|q| q.broker_name != "b2"));
        assert_eq!(master_addr(&route, "b1"), Some("127.0.0.1:10911"));
        assert_eq!(master_addr(&route, "b2"), None);
        assert_eq!(master_addr(&route, "nope"), None);
    }

    #[test]
    fn addr_lists() {
        assert_eq!(
            parse_addr_list(" a:1; b:2;;"),
            vec!["a:1".to_string(), "b:2".to_string()]
        );
        assert!(parse_addr_list(" ; ").is_empty());
    }
}
