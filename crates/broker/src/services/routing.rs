//! Where a sent message is stored when it must not be visible yet
//! (`HookUtils.handleScheduleMessage` and the half-message branch of
//! `SendMessageProcessor`):
//!
//! - a **half message** (sysFlag transaction type PREPARED) goes to
//!   `RMQ_SYS_TRANS_HALF_TOPIC` queue 0 until END_TRANSACTION;
//! - a **timer message** (TIMER_DELIVER_MS, TIMER_DELAY_SEC or
//!   TIMER_DELAY_MS, due in the future, no delay level) goes to
//!   `rmq_sys_wheel_timer` queue 0 until due, with its due time in
//!   TIMER_OUT_MS.
//!
//! Both keep the real destination in REAL_TOPIC and REAL_QID. A message
//! with a delay level (DELAY) is left to the delay-level scheduler; its
//! timer properties are dropped, as Java does.

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::record::sys_flag;

use crate::config::BrokerConfig;
use crate::error::Reject;
use crate::services::topics::{HALF_TOPIC, TIMER_TOPIC};

/// Where a message is stored instead of its own topic and queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    pub topic: &'static str,
    pub queue_id: i32,
    pub sys_flag: i32,
}

fn illegal(remark: String) -> Reject {
    Reject::new(response_code::MESSAGE_ILLEGAL, remark)
}

fn parse_ms(name: &str, value: &str) -> Result<i64, Reject> {
    value
        .trim()
        .parse::<i64>()
        .map_err(|_| illegal(format!("timer property {name}={value} is not a number")))
}

/// The due time asked for by a message's timer properties, if any.
fn timer_deliver_ms(props: &Properties, now_ms: i64) -> Result<Option<i64>, Reject> {
    if let Some(value) = props.get(properties::TIMER_DELAY_SEC) {
        let seconds = parse_ms(properties::TIMER_DELAY_SEC, value)?;
        return Ok(Some(now_ms.saturating_add(seconds.saturating_mul(1000))));
    }
    if let Some(value) = props.get(properties::TIMER_DELAY_MS) {
        let delay = parse_ms(properties::TIMER_DELAY_MS, value)?;
        return Ok(Some(now_ms.saturating_add(delay)));
    }
    match props.get(properties::TIMER_DELIVER_MS) {
        Some(value) => parse_ms(properties::TIMER_DELIVER_MS, value).map(Some),
        None => Ok(None),
    }
}

/// A batch cannot be a half message (it would be stored visible): refused,
/// as the Java client refuses to build one.
pub(crate) fn check_batch(flag: i32) -> Result<(), Reject> {
    if sys_flag::transaction_type(flag) == sys_flag::TRANSACTION_PREPARED {
        return Err(illegal(
            "batch message does not support transactional (half) messages".into(),
        ));
    }
    Ok(())
}

/// Decides where a message sent to `topic`/`queue_id` is stored, updating
/// its properties; `None` keeps it where it was sent. The caller has
/// refused internal topics (`topics::is_send_forbidden`).
pub(crate) fn route_send(
    config: &BrokerConfig,
    topic: &str,
    queue_id: i32,
    flag: i32,
    props: &mut Properties,
    now_ms: i64,
) -> Result<Option<Redirect>, Reject> {
    let transaction = sys_flag::transaction_type(flag);
    if transaction == sys_flag::TRANSACTION_PREPARED {
        props.insert(properties::REAL_TOPIC, topic);
        props.insert(properties::REAL_QID, queue_id.to_string());
        return Ok(Some(Redirect {
            topic: HALF_TOPIC,
            queue_id: 0,
            sys_flag: sys_flag::with_transaction_type(flag, sys_flag::TRANSACTION_NOT_TYPE),
        }));
    }
    if transaction == sys_flag::TRANSACTION_ROLLBACK {
        return Ok(None);
    }
    let has_timer = [
        properties::TIMER_DELIVER_MS,
        properties::TIMER_DELAY_SEC,
        properties::TIMER_DELAY_MS,
    ]
    .iter()
    .any(|name| props.contains(name));
    if !has_timer || props.contains(properties::TIMER_OUT_MS) {
        return Ok(None);
    }
    if props.delay_level().is_some_and(|level| level > 0) {
        for name in [
            properties::TIMER_DELIVER_MS,
            properties::TIMER_DELAY_SEC,
            properties::TIMER_DELAY_MS,
        ] {
            props.remove(name);
        }
        return Ok(None);
    }
    let Some(deliver_ms) = timer_deliver_ms(props, now_ms)? else {
        return Ok(None);
    };
    if deliver_ms <= now_ms {
        // Already due: stored as a plain message, as Java does.
        return Ok(None);
    }
    let max_delay_ms = i64::try_from(config.timer_max_delay_sec)
        .unwrap_or(i64::MAX / 1000)
        .saturating_mul(1000);
    if deliver_ms - now_ms > max_delay_ms {
        return Err(illegal(format!(
            "timer message illegal, the delay time should not be bigger than the max delay {max_delay_ms}ms \
             (timerMaxDelaySec {}); asked for {}ms",
            config.timer_max_delay_sec,
            deliver_ms - now_ms
        )));
    }
    props.insert(properties::TIMER_OUT_MS, deliver_ms.to_string());
    props.insert(properties::REAL_TOPIC, topic);
    props.insert(properties::REAL_QID, queue_id.to_string());
    Ok(Some(Redirect {
        topic: TIMER_TOPIC,
        queue_id: 0,
        sys_flag: flag,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Properties {
        let mut props = Properties::new();
        for (name, value) in pairs {
            props.insert(*name, *value);
        }
        props
    }

    #[test]
    fn timer_messages_go_to_the_timer_topic_with_their_due_time() {
        let config = BrokerConfig::default();
        let mut p = props(&[(properties::TIMER_DELAY_SEC, "3")]);
        let redirect = route_send(&config, "T", 2, 0, &mut p, 10_000)
            .unwrap()
            .unwrap();
        assert_eq!(redirect.topic, TIMER_TOPIC);
        assert_eq!(redirect.queue_id, 0);
        assert_eq!(p.get(properties::TIMER_OUT_MS), Some("13000"));
        assert_eq!(p.get(properties::REAL_TOPIC), Some("T"));
        assert_eq!(p.get(properties::REAL_QID), Some("2"));

        let mut p = props(&[(properties::TIMER_DELAY_MS, "1500")]);
        route_send(&config, "T", 0, 0, &mut p, 10_000)
            .unwrap()
            .unwrap();
        assert_eq!(p.get(properties::TIMER_OUT_MS), Some("11500"));

        let mut p = props(&[(properties::TIMER_DELIVER_MS, "20000")]);
        route_send(&config, "T", 0, 0, &mut p, 10_000)
            .unwrap()
            .unwrap();
        assert_eq!(p.get(properties::TIMER_OUT_MS), Some("20000"));
    }

    #[test]
    fn due_plain_and_delay_level_messages_stay_put() {
        let config = BrokerConfig::default();
        let mut p = props(&[(properties::TIMER_DELIVER_MS, "5000")]);
        assert_eq!(
            route_send(&config, "T", 0, 0, &mut p, 10_000).unwrap(),
            None
        );
        let mut p = props(&[("KEYS", "k")]);
        assert_eq!(
            route_send(&config, "T", 0, 0, &mut p, 10_000).unwrap(),
            None
        );
        let mut p = props(&[(properties::TIMER_DELAY_SEC, "3"), (properties::DELAY, "2")]);
        assert_eq!(
            route_send(&config, "T", 0, 0, &mut p, 10_000).unwrap(),
            None
        );
        assert!(!p.contains(properties::TIMER_DELAY_SEC));
    }

    #[test]
    fn too_long_or_malformed_delays_are_illegal() {
        let config = BrokerConfig {
            timer_max_delay_sec: 60,
            ..BrokerConfig::default()
        };
        let mut p = props(&[(properties::TIMER_DELAY_SEC, "61")]);
        let reject = route_send(&config, "T", 0, 0, &mut p, 0).unwrap_err();
        assert_eq!(reject.code, response_code::MESSAGE_ILLEGAL);
        assert!(
            reject.remark.contains("max delay 60000ms"),
            "{}",
            reject.remark
        );
        let mut p = props(&[(properties::TIMER_DELAY_SEC, "60")]);
        assert!(route_send(&config, "T", 0, 0, &mut p, 0).unwrap().is_some());
        let mut p = props(&[(properties::TIMER_DELAY_MS, "soon")]);
        assert!(route_send(&config, "T", 0, 0, &mut p, 0).is_err());
        assert!(check_batch(sys_flag::TRANSACTION_PREPARED).is_err());
        assert!(check_batch(sys_flag::COMPRESSED).is_ok());
    }

    #[test]
    fn half_messages_go_to_the_half_topic() {
        let config = BrokerConfig::default();
        let mut p = props(&[(properties::TIMER_DELAY_SEC, "3")]);
        let flag = sys_flag::TRANSACTION_PREPARED | sys_flag::COMPRESSED;
        let redirect = route_send(&config, "T", 3, flag, &mut p, 0)
            .unwrap()
            .unwrap();
        assert_eq!(redirect.topic, HALF_TOPIC);
        assert_eq!(redirect.sys_flag, sys_flag::COMPRESSED);
        assert_eq!(p.get(properties::REAL_QID), Some("3"));
        assert!(!p.contains(properties::TIMER_OUT_MS));
    }
}
