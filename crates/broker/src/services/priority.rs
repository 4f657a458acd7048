//! Priority messages (RocketMQ 5.4, RIP-80), as Java's broker applies them.
//! A message's priority is its `_SYS_MSG_PRIORITY_` property, a number of
//! 0 or more. On send (`SendMessageProcessor`) a message whose properties
//! make it a priority message (not a half, delay, timer or FIFO message) is
//! stored in queue `min(priority, writeQueueNums - 1)`, whatever queue the
//! client asked for; any other message loses the property. On pop
//! (`PopMessageProcessor`, `PopConsumerService`) of any queue of a topic
//! whose `message.type` attribute is `PRIORITY`, a pop that is not ordered
//! reads the queues from the highest id down (Java's default
//! `priorityOrderAsc=true`: queue 0 is the lowest priority) and the group's
//! pop retry topic after them (`popFromRetryProbabilityForPriority`, 0), so
//! within one broker the highest priority present is delivered first.

use ferrocket_protocol::body::TopicConfig;
use ferrocket_protocol::properties::{self, Properties};

use crate::services::metrics::MessageType;

/// The topic attribute naming its message type (`TopicAttributes`).
pub const MESSAGE_TYPE_ATTRIBUTE: &str = "message.type";
/// The message type of a priority topic (`TopicMessageType.PRIORITY`).
pub const PRIORITY_TYPE: &str = "PRIORITY";

/// The message's priority, as Java's `Message.getPriority` reads it:
/// `None` when absent, unreadable or negative.
pub fn of(props: &Properties) -> Option<i32> {
    props
        .get(properties::PRIORITY)
        .and_then(|text| text.parse::<i32>().ok())
        .filter(|p| *p >= 0)
}

/// The queue a sent message is stored in: a priority message's by its
/// priority, any other the one chosen (`queue_id`). A priority property on
/// a message of another type is dropped, as Java drops it.
pub fn send_queue(props: &mut Properties, queue_id: i32, write_queue_nums: i32) -> i32 {
    let Some(priority) = of(props) else {
        return queue_id;
    };
    if MessageType::of(props) != MessageType::Normal || write_queue_nums <= 0 {
        props.remove(properties::PRIORITY);
        return queue_id;
    }
    priority.min(write_queue_nums - 1)
}

/// Whether a topic is a priority topic (`message.type=PRIORITY`).
pub fn is_priority_topic(config: &TopicConfig) -> bool {
    config
        .attributes
        .get(MESSAGE_TYPE_ATTRIBUTE)
        .is_some_and(|t| t == PRIORITY_TYPE)
}

/// The order a pop of any queue reads a topic's `read_queues` queues in:
/// from the highest id down for a priority pop, otherwise from `start`
/// on, wrapping.
pub fn pop_order(read_queues: i32, start: i32, priority: bool) -> Vec<i32> {
    let n = read_queues.max(0);
    if priority {
        return (0..n).rev().collect();
    }
    (0..n).map(|i| (start + i) % n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(entries: &[(&str, &str)]) -> Properties {
        let mut props = Properties::new();
        for (name, value) in entries {
            props.insert(name, value);
        }
        props
    }

    #[test]
    fn priority_picks_its_queue_capped_at_the_last() {
        let mut p = props(&[(properties::PRIORITY, "3")]);
        assert_eq!(send_queue(&mut p, 0, 8), 3);
        let mut p = props(&[(properties::PRIORITY, "0")]);
        assert_eq!(send_queue(&mut p, 5, 8), 0);
        let mut p = props(&[(properties::PRIORITY, "100")]);
        assert_eq!(send_queue(&mut p, 2, 8), 7);
        assert_eq!(p.get(properties::PRIORITY), Some("100"), "kept");
    }

    #[test]
    fn no_or_unreadable_priority_keeps_the_chosen_queue() {
        for value in ["-1", "x", ""] {
            let mut p = props(&[(properties::PRIORITY, value)]);
            assert_eq!(send_queue(&mut p, 2, 8), 2, "{value}");
        }
        assert_eq!(send_queue(&mut Properties::new(), 4, 8), 4);
    }

    #[test]
    fn other_message_types_lose_the_priority() {
        for other in [
            (properties::SHARDING_KEY, "g"),
            (properties::TRAN_MSG, "true"),
            (properties::DELAY, "3"),
            (properties::TIMER_DELIVER_MS, "1"),
        ] {
            let mut p = props(&[(properties::PRIORITY, "6"), other]);
            assert_eq!(send_queue(&mut p, 1, 8), 1, "{other:?}");
            assert_eq!(p.get(properties::PRIORITY), None, "{other:?}");
        }
    }

    #[test]
    fn priority_topic_by_attribute() {
        let mut topic = TopicConfig::new("T", 8);
        assert!(!is_priority_topic(&topic));
        topic
            .attributes
            .insert(MESSAGE_TYPE_ATTRIBUTE.into(), "NORMAL".into());
        assert!(!is_priority_topic(&topic));
        topic
            .attributes
            .insert(MESSAGE_TYPE_ATTRIBUTE.into(), PRIORITY_TYPE.into());
        assert!(is_priority_topic(&topic));
    }

    #[test]
    fn priority_pops_read_the_highest_queue_first() {
        assert_eq!(pop_order(4, 2, true), vec![3, 2, 1, 0]);
        assert_eq!(pop_order(4, 2, false), vec![2, 3, 0, 1]);
        assert_eq!(pop_order(0, 0, true), Vec::<i32>::new());
        assert_eq!(pop_order(0, 0, false), Vec::<i32>::new());
    }
}
