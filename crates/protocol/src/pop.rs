//! Pop consumption's strings (RocketMQ's `ExtraInfoUtil`): the receipt
//! handle a client sends back with ACK_MESSAGE and
//! CHANGE_MESSAGE_INVISIBLETIME (`extraInfo`), and the pop answer's
//! `startOffsetInfo` / `msgOffsetInfo`.
//!
//! extraInfo is space separated: `ckQueueOffset popTime invisibleTime
//! reviveQid t brokerName queueId [msgQueueOffset] [commitLogOffset]`, where
//! `t` marks the topic read: "0" the topic itself, "1" its pop retry topic
//! `%RETRY%{group}_{topic}`, "2" the v2 retry topic `%RETRY%{group}+{topic}`.

use crate::ProtocolError;

/// The retry mark of a topic read by a pop.
pub fn retry_mark(topic: &str) -> &'static str {
    match topic.strip_prefix("%RETRY%") {
        None => "0",
        Some(rest) if rest.contains('+') => "2",
        Some(_) => "1",
    }
}

/// A pop's receipt handle fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraInfo {
    /// Start offset of the pop (the checkpoint) on its queue.
    pub ck_queue_offset: i64,
    pub pop_time_ms: i64,
    pub invisible_time_ms: i64,
    pub revive_qid: i32,
    pub retry_mark: String,
    pub broker_name: String,
    pub queue_id: i32,
    pub msg_queue_offset: Option<i64>,
}

impl ExtraInfo {
    /// Reads the first seven fields (and the eighth when present).
    pub fn parse(text: &str) -> Result<Self, ProtocolError> {
        let fields: Vec<&str> = text.split(' ').filter(|f| !f.is_empty()).collect();
        let bad = || ProtocolError::InvalidField {
            field: "extraInfo",
            value: text.chars().take(200).collect(),
        };
        if fields.len() < 7 {
            return Err(bad());
        }
        let int = |i: usize| fields[i].parse::<i64>().map_err(|_| bad());
        Ok(ExtraInfo {
            ck_queue_offset: int(0)?,
            pop_time_ms: int(1)?,
            invisible_time_ms: int(2)?,
            revive_qid: i32::try_from(int(3)?).map_err(|_| bad())?,
            retry_mark: fields[4].to_string(),
            broker_name: fields[5].to_string(),
            queue_id: i32::try_from(int(6)?).map_err(|_| bad())?,
            msg_queue_offset: fields.get(7).and_then(|f| f.parse().ok()),
        })
    }
}

/// `startOffsetInfo` / `msgOffsetInfo` builder: entries joined by ';'.
#[derive(Debug, Default, Clone)]
pub struct OffsetInfo {
    start: Vec<String>,
    msgs: Vec<String>,
    counts: Vec<String>,
}

impl OffsetInfo {
    /// One queue's pop: read from `topic` queue `queue_id` from `start`,
    /// returning the messages at `offsets`.
    pub fn add(&mut self, topic: &str, queue_id: i32, start: i64, offsets: &[i64]) {
        let mark = retry_mark(topic);
        self.start.push(format!("{mark} {queue_id} {start}"));
        let list: Vec<String> = offsets.iter().map(i64::to_string).collect();
        self.msgs
            .push(format!("{mark} {queue_id} {}", list.join(",")));
    }

    /// An ordered pop's counts: how many times each message at `offsets`
    /// was handed out before (`orderCountInfo`: an entry per message and
    /// the queue's smallest count).
    pub fn add_counts(&mut self, topic: &str, queue_id: i32, offsets: &[i64], counts: &[u32]) {
        let mark = retry_mark(topic);
        for (offset, count) in offsets.iter().zip(counts) {
            self.counts
                .push(format!("{mark} qo{queue_id}%{offset} {count}"));
        }
        let min = counts.iter().min().copied().unwrap_or(0);
        self.counts.push(format!("{mark} {queue_id} {min}"));
    }

    /// `orderCountInfo`, when any ordered pop added counts.
    pub fn order_count_info(&self) -> Option<String> {
        (!self.counts.is_empty()).then(|| self.counts.join(";"))
    }

    pub fn start_offset_info(&self) -> String {
        self.start.join(";")
    }

    pub fn msg_offset_info(&self) -> String {
        self.msgs.join(";")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_info_reads_javas_layout() {
        let info = ExtraInfo::parse("100 1700000000000 60000 0 1 broker-a 3 105").unwrap();
        assert_eq!(info.ck_queue_offset, 100);
        assert_eq!(info.invisible_time_ms, 60_000);
        assert_eq!(info.retry_mark, "1");
        assert_eq!(info.queue_id, 3);
        assert_eq!(info.msg_queue_offset, Some(105));
        assert!(ExtraInfo::parse("1 2 3").is_err());
        assert_eq!(retry_mark("%RETRY%g_T"), "1");
        assert_eq!(retry_mark("%RETRY%g+T"), "2");
        assert_eq!(retry_mark("T"), "0");
        let mut offsets = OffsetInfo::default();
        offsets.add("T", 0, 10, &[10, 12]);
        offsets.add("%RETRY%g_T", 0, 0, &[0]);
        assert_eq!(offsets.start_offset_info(), "0 0 10;1 0 0");
        assert_eq!(offsets.msg_offset_info(), "0 0 10,12;1 0 0");
        assert_eq!(offsets.order_count_info(), None);
        offsets.add_counts("T", 2, &[7, 8], &[1, 0]);
        assert_eq!(
            offsets.order_count_info().as_deref(),
            Some("0 qo2%7 1;0 qo2%8 0;0 2 0")
        );
    }
}
