//! The topic table (`TopicConfigManager`): system topics present by default,
//! the changes shard 0 applies to its master copy, and `config/topics.json`.

use ferrocket_protocol::body::{perm, TopicConfig, TopicConfigSerializeWrapper};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::limits::validate_topic;
use ferrocket_runtime::shard::owner_shard;
use ferrocket_store::ConfigDir;

use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::error::Reject;

/// The topic table as stored in topics.json and sent to name servers.
pub type TopicTable = TopicConfigSerializeWrapper;

/// The topic holding delayed messages (`TopicValidator.RMQ_SYS_SCHEDULE_TOPIC`).
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
/// Topic holding timer messages until due (`TimerMessageStore.TIMER_TOPIC`).
pub(crate) const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";
/// Topic of half (prepared) transactional messages.
pub(crate) const HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
/// Topic of transaction op records (one per ended half message).
pub(crate) const OP_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";

/// The shard owning the timer store and the message index.
pub(crate) fn timer_shard(count: usize) -> usize {
    owner_shard(TIMER_TOPIC, 0, count)
}

/// The shard owning transaction state.
pub(crate) fn txn_shard(count: usize) -> usize {
    owner_shard(HALF_TOPIC, 0, count)
}

/// Where discarded half messages are kept (`TransactionalMessageUtil`).
pub const CHECK_MAX_TIME_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";

/// File holding the topic table under `config/`.
pub const TOPICS_FILE: &str = "topics.json";
/// Template topic of auto-created topics (`AUTO_CREATE_TOPIC_KEY_TOPIC`).
pub const TBW102: &str = "TBW102";
/// Prefix of consumer groups' retry topics (`RETRY_GROUP_TOPIC_PREFIX`).
pub const RETRY_TOPIC_PREFIX: &str = "%RETRY%";
/// Prefix of dead-letter topics (`MixAll.DLQ_GROUP_TOPIC_PREFIX`).
pub const DLQ_TOPIC_PREFIX: &str = "%DLQ%";
/// Queues of a dead-letter topic (`DLQ_NUMS_PER_GROUP`).
pub const DLQ_QUEUE_NUMS: i32 = 1;

/// Suffix of the cluster's reply topic (`MixAll.REPLY_TOPIC_POSTFIX`).
pub const REPLY_TOPIC_SUFFIX: &str = "REPLY_TOPIC";

/// The topic request-reply answers are sent to, `<cluster>_REPLY_TOPIC`
/// (Java's `TopicConfigManager` has it from the start, one queue).
pub fn reply_topic(cluster: &str) -> String {
    format!("{cluster}_{REPLY_TOPIC_SUFFIX}")
}

/// The dead-letter topic of a consumer group.
pub fn dlq_topic(group: &str) -> String {
    format!("{DLQ_TOPIC_PREFIX}{group}")
}
/// Most queues a topic may have.
pub const TOPIC_QUEUE_NUMS_MAX: i32 = 1024;
/// Queues of a retry topic (`retryQueueNums`).
pub const RETRY_QUEUE_NUMS: i32 = 1;

/// System topics created at start (`TopicValidator` / `TopicConfigManager`),
/// with their queue counts. The cluster and broker name topics are added
/// from the config.
const SYSTEM_TOPICS: [(&str, i32); 6] = [
    ("SELF_TEST_TOPIC", 1),
    ("OFFSET_MOVED_EVENT", 1),
    ("SCHEDULE_TOPIC_XXXX", 18),
    ("RMQ_SYS_TRANS_HALF_TOPIC", 1),
    ("RMQ_SYS_TRANS_OP_HALF_TOPIC", 1),
    ("RMQ_SYS_TRACE_TOPIC", 1),
];

/// System topics the broker creates when it first needs them.
const ON_DEMAND_SYSTEM_TOPICS: [&str; 1] = [CHECK_MAX_TIME_TOPIC];

/// Prefix of internal topics (`TopicValidator.SYSTEM_TOPIC_PREFIX`); the
/// timer's `rmq_sys_wheel_timer` is one.
pub const SYSTEM_TOPIC_PREFIX: &str = "rmq_sys_";
/// The message-trace topic: a system topic that clients do send to.
pub const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";

/// Topics no client may send to, by any send request: Java's
/// `TopicValidator.isNotAllowedSendTopic` set, plus `TBW102` and every
/// `rmq_sys_` topic. Messages stored in the timer, delay-level and half
/// topics are copied by the broker to their REAL_TOPIC, so one a client
/// put there would be a message the broker trusts. The trace topic stays
/// open; the cluster and broker name topics take sends as in Java, unless
/// their setting took their write perm away (see [`default_table`]).
pub fn is_send_forbidden(topic: &str) -> bool {
    topic != TRACE_TOPIC && is_system_topic(topic)
}

/// Topics an admin may not create or delete (`TopicValidator.isSystemTopic`).
pub fn is_system_topic(topic: &str) -> bool {
    topic == TBW102
        || topic.starts_with(SYSTEM_TOPIC_PREFIX)
        || ON_DEMAND_SYSTEM_TOPICS.contains(&topic)
        || SYSTEM_TOPICS.iter().any(|(n, _)| *n == topic)
}

/// The retry topic of a consumer group.
pub fn retry_topic(group: &str) -> String {
    format!("{RETRY_TOPIC_PREFIX}{group}")
}

/// A change to the topic table; applied only on shard 0.
#[derive(Debug, Clone)]
pub(crate) enum TopicChange {
    /// UPDATE_AND_CREATE_TOPIC.
    Upsert(TopicConfig),
    /// A send to an unknown topic, modelled on `default_topic`.
    AutoCreate {
        topic: String,
        default_topic: String,
        queue_nums: i32,
    },
    /// A consumer group's retry topic, created on its first heartbeat.
    EnsureRetry { group: String },
    /// DELETE_TOPIC_IN_BROKER.
    Delete(String),
}

fn system_config(name: &str, queues: i32, topic_perm: i32) -> TopicConfig {
    TopicConfig {
        perm: topic_perm,
        ..TopicConfig::new(name, queues)
    }
}

/// The cluster and broker name topics (`TopicConfigManager.init`): their
/// queues, and whether `clusterTopicEnable` / `brokerTopicEnable` open
/// them to sends and pulls (mqadmin's `sendMsgStatus` and `clusterRT` send
/// to the broker name topic).
fn name_topics(config: &BrokerConfig) -> [(&str, i32, bool); 2] {
    [
        (&config.broker_cluster_name, 16, config.cluster_topic_enable),
        (&config.broker_name, 1, config.broker_topic_enable),
    ]
}

/// Sets the name topics' perm as Java does: always a template (INHERIT),
/// readable and writable only while their setting is on.
fn apply_name_topic_perms(table: &mut TopicTable, config: &BrokerConfig) {
    for (name, _, enabled) in name_topics(config) {
        if let Some(topic) = table.topic_config_table.get_mut(name) {
            topic.perm = if enabled {
                perm::INHERIT | perm::READ_WRITE
            } else {
                perm::INHERIT
            };
        }
    }
}

/// The table a fresh broker starts with.
pub fn default_table(config: &BrokerConfig) -> TopicTable {
    let mut table = TopicTable::default();
    let mut put = |topic: TopicConfig| {
        table
            .topic_config_table
            .insert(topic.topic_name.clone(), topic);
    };
    for (name, queues) in SYSTEM_TOPICS {
        put(system_config(name, queues, perm::READ_WRITE));
    }
    let inherit = perm::INHERIT | perm::READ_WRITE;
    let template_perm = if config.auto_create_topic_enable {
        inherit
    } else {
        perm::READ_WRITE
    };
    put(system_config(
        TBW102,
        config.default_topic_queue_nums,
        template_perm,
    ));
    for (name, queues, _) in name_topics(config) {
        put(system_config(name, queues, inherit));
    }
    // Clients send replies here; without it a replier finds no route and
    // falls back on the template's (or fails where there is none).
    put(system_config(
        &reply_topic(&config.broker_cluster_name),
        1,
        perm::READ_WRITE,
    ));
    apply_name_topic_perms(&mut table, config);
    table
}

/// Loads topics.json over the defaults (the file wins for topics it has).
pub fn load_table(dir: &ConfigDir, config: &BrokerConfig) -> Result<TopicTable, BrokerError> {
    let mut table = default_table(config);
    if let Some(stored) = dir.read_json::<TopicTable>(TOPICS_FILE)? {
        for (name, topic) in stored.topic_config_table {
            if validate_topic(&name).is_ok() && name == topic.topic_name {
                table.topic_config_table.insert(name, topic);
            } else {
                tracing::warn!(topic = %name, "ignoring an invalid entry of topics.json");
            }
        }
        table.data_version = stored.data_version;
        // The settings decide, not a perm stored under other settings.
        apply_name_topic_perms(&mut table, config);
    }
    // A new version at every start: name servers take the table afresh.
    table.data_version.next(crate::clock::now_ms());
    Ok(table)
}

fn check_queue_nums(topic: &TopicConfig) -> Result<(), Reject> {
    let valid = 0..=TOPIC_QUEUE_NUMS_MAX;
    if !valid.contains(&topic.read_queue_nums) || !valid.contains(&topic.write_queue_nums) {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            format!(
                "queue numbers of topic {} must be within 0..={TOPIC_QUEUE_NUMS_MAX}",
                topic.topic_name
            ),
        ));
    }
    Ok(())
}

type Topics = std::collections::BTreeMap<String, TopicConfig>;
/// What one change did: the topic it concerns and whether the table changed.
type Applied = (Option<TopicConfig>, bool);

/// Room for `name` under `topicCountMax` (an existing topic always fits).
fn room(topics: &Topics, name: &str, config: &BrokerConfig) -> Result<(), Reject> {
    if topics.contains_key(name) || topics.len() < config.topic_count_max {
        return Ok(());
    }
    Err(Reject::system(format!(
        "topic[{name}] not created: the broker holds {} topics already (topicCountMax)",
        topics.len()
    )))
}

fn invalid_name(name: &str) -> Result<(), Reject> {
    validate_topic(name).map_err(|e| Reject::new(response_code::INVALID_PARAMETER, e.to_string()))
}

fn check_attributes(topic: &TopicConfig) -> Result<(), Reject> {
    let max = crate::config::CONFIG_ENTRY_BYTES_MAX;
    let bytes: usize = topic
        .attributes
        .iter()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    if bytes > max {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            format!(
                "the attributes of topic {} take {bytes} bytes, more than {max}",
                topic.topic_name
            ),
        ));
    }
    Ok(())
}

/// The filter types RocketMQ knows (`TopicFilterType`).
const TOPIC_FILTER_TYPES: [&str; 2] = ["SINGLE_TAG", "MULTI_TAG"];

fn check_filter_type(topic: &TopicConfig) -> Result<(), Reject> {
    if TOPIC_FILTER_TYPES.contains(&topic.topic_filter_type.as_str()) {
        return Ok(());
    }
    Err(Reject::new(
        response_code::INVALID_PARAMETER,
        format!(
            "topicFilterType `{}` of topic {} is not SINGLE_TAG or MULTI_TAG",
            topic.topic_filter_type, topic.topic_name
        ),
    ))
}

fn upsert(
    topics: &mut Topics,
    topic: TopicConfig,
    config: &BrokerConfig,
) -> Result<Applied, Reject> {
    invalid_name(&topic.topic_name)?;
    check_queue_nums(&topic)?;
    room(topics, &topic.topic_name, config)?;
    check_attributes(&topic)?;
    check_filter_type(&topic)?;
    let changed = topics.get(&topic.topic_name) != Some(&topic);
    topics.insert(topic.topic_name.clone(), topic.clone());
    Ok((Some(topic), changed))
}

fn auto_create(
    topics: &mut Topics,
    topic: String,
    default_topic: &str,
    queue_nums: i32,
    config: &BrokerConfig,
) -> Result<Applied, Reject> {
    if let Some(existing) = topics.get(&topic) {
        return Ok((Some(existing.clone()), false));
    }
    let Some(template) = topics.get(default_topic) else {
        return Ok((None, false));
    };
    // autoCreateTopicEnable=false stops every auto-creation, not only the
    // one through TBW102 (Java lets `defaultTopic=` the cluster name through).
    if template.perm & perm::INHERIT == 0 || !config.auto_create_topic_enable {
        return Ok((None, false));
    }
    room(topics, &topic, config)?;
    let queues = queue_nums.clamp(1, template.write_queue_nums.max(1));
    let created = TopicConfig {
        perm: template.perm & !perm::INHERIT,
        topic_filter_type: template.topic_filter_type.clone(),
        ..TopicConfig::new(&topic, queues)
    };
    topics.insert(topic, created.clone());
    tracing::info!(topic = %created.topic_name, queues, "auto-created topic");
    Ok((Some(created), true))
}

fn ensure_retry(
    topics: &mut Topics,
    group: &str,
    config: &BrokerConfig,
) -> Result<Applied, Reject> {
    let name = retry_topic(group);
    if let Some(existing) = topics.get(&name) {
        return Ok((Some(existing.clone()), false));
    }
    invalid_name(&name)?;
    room(topics, &name, config)?;
    let created = TopicConfig::new(&name, RETRY_QUEUE_NUMS);
    topics.insert(name, created.clone());
    Ok((Some(created), true))
}

/// Applies `change` to `table`; returns the topic it concerns (None after a
/// delete, or when an auto-create is not allowed) and whether the table
/// changed.
pub(crate) fn apply(
    table: &mut TopicTable,
    change: TopicChange,
    config: &BrokerConfig,
    now_ms: i64,
) -> Result<Applied, Reject> {
    let topics = &mut table.topic_config_table;
    let outcome = match change {
        TopicChange::Upsert(topic) => upsert(topics, topic, config)?,
        TopicChange::AutoCreate {
            topic,
            default_topic,
            queue_nums,
        } => auto_create(topics, topic, &default_topic, queue_nums, config)?,
        TopicChange::EnsureRetry { group } => ensure_retry(topics, &group, config)?,
        TopicChange::Delete(name) => (None, topics.remove(&name).is_some()),
    };
    if outcome.1 {
        table.data_version.next(now_ms);
    }
    Ok(outcome)
}

/// How a missing topic named `name` comes to exist on a send: a retry
/// topic for its group, any other from its template.
pub(crate) fn creation_for_send(name: &str, template: &str, queue_nums: i32) -> TopicChange {
    match name.strip_prefix(RETRY_TOPIC_PREFIX) {
        Some(group) => TopicChange::EnsureRetry {
            group: group.to_string(),
        },
        None => TopicChange::AutoCreate {
            topic: name.to_string(),
            default_topic: template.to_string(),
            queue_nums,
        },
    }
}

/// A topic an admin request may create or delete: a valid name, not a
/// system topic's.
pub(crate) fn check_admin_topic(topic: &str) -> Result<(), Reject> {
    validate_topic(topic).map_err(|e| Reject::system(e.to_string()))?;
    if is_system_topic(topic) {
        return Err(Reject::system(format!(
            "The topic[{topic}] is conflict with system topic."
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_hold_the_template_and_system_topics() {
        let config = BrokerConfig::default();
        let table = default_table(&config);
        let template = &table.topic_config_table[TBW102];
        assert_eq!(template.write_queue_nums, 8);
        assert_eq!(template.perm, 7);
        assert!(table.topic_config_table.contains_key("DefaultCluster"));
        assert!(table.topic_config_table.contains_key("SCHEDULE_TOPIC_XXXX"));
        assert!(is_system_topic("TRANS_CHECK_MAX_TIME_TOPIC"));
    }

    #[test]
    fn the_cluster_reply_topic_exists_and_takes_replies() {
        let config = BrokerConfig {
            broker_cluster_name: "C1".into(),
            ..BrokerConfig::default()
        };
        let table = default_table(&config);
        let reply = &table.topic_config_table["C1_REPLY_TOPIC"];
        assert_eq!(
            (reply.read_queue_nums, reply.write_queue_nums, reply.perm),
            (1, 1, perm::READ_WRITE)
        );
        assert!(!is_send_forbidden("C1_REPLY_TOPIC"));
    }

    #[test]
    fn internal_topics_take_no_client_sends() {
        let config = BrokerConfig::default();
        for topic in [
            TBW102,
            "TRANS_CHECK_MAX_TIME_TOPIC",
            "rmq_sys_wheel_timer",
            "rmq_sys_anything",
            "SCHEDULE_TOPIC_XXXX",
            "RMQ_SYS_TRANS_HALF_TOPIC",
            "RMQ_SYS_TRANS_OP_HALF_TOPIC",
            "SELF_TEST_TOPIC",
            "OFFSET_MOVED_EVENT",
        ] {
            assert!(is_send_forbidden(topic), "{topic}");
        }
        // The name topics are left to their perm (Java's TopicConfigManager).
        let names = [
            config.broker_cluster_name.as_str(),
            config.broker_name.as_str(),
        ];
        for topic in ["TopicTest", TRACE_TOPIC, "%RETRY%g", "%DLQ%g", "rmq_sys"]
            .into_iter()
            .chain(names)
        {
            assert!(!is_send_forbidden(topic), "{topic}");
        }
    }

    #[test]
    fn the_name_topics_are_writable_templates_while_their_settings_are_on() {
        let perms = |config: &BrokerConfig| {
            let table = default_table(config);
            let of = |name: &str| table.topic_config_table[name].perm;
            (of(&config.broker_cluster_name), of(&config.broker_name))
        };
        let open = perm::INHERIT | perm::READ_WRITE;
        assert_eq!(perms(&BrokerConfig::default()), (open, open));
        let closed = BrokerConfig {
            cluster_topic_enable: false,
            broker_topic_enable: false,
            ..BrokerConfig::default()
        };
        assert_eq!(perms(&closed), (perm::INHERIT, perm::INHERIT));
        let broker_only = BrokerConfig {
            cluster_topic_enable: false,
            ..BrokerConfig::default()
        };
        assert_eq!(perms(&broker_only), (perm::INHERIT, open));
        // A topics.json written under other settings does not reopen them.
        let dir = tempfile::tempdir().unwrap();
        let stored = ConfigDir::open(dir.path()).unwrap();
        stored
            .write_json(TOPICS_FILE, &default_table(&BrokerConfig::default()))
            .unwrap();
        let loaded = load_table(&stored, &closed).unwrap();
        let name = &closed.broker_name;
        assert_eq!(loaded.topic_config_table[name].perm, perm::INHERIT);
    }

    #[test]
    fn auto_create_inherits_from_the_template() {
        let config = BrokerConfig::default();
        let mut table = default_table(&config);
        let change = TopicChange::AutoCreate {
            topic: "T".into(),
            default_topic: TBW102.into(),
            queue_nums: 4,
        };
        let (created, changed) = apply(&mut table, change.clone(), &config, 1).unwrap();
        let created = created.unwrap();
        assert!(changed);
        assert_eq!((created.write_queue_nums, created.perm), (4, 6));
        let (_, again) = apply(&mut table, change, &config, 2).unwrap();
        assert!(!again);
        let off = BrokerConfig {
            auto_create_topic_enable: false,
            ..BrokerConfig::default()
        };
        let (none, _) = apply(
            &mut default_table(&off),
            TopicChange::AutoCreate {
                topic: "U".into(),
                default_topic: TBW102.into(),
                queue_nums: 4,
            },
            &off,
            3,
        )
        .unwrap();
        assert!(none.is_none());
    }

    #[test]
    fn upsert_validates_and_delete_removes() {
        let config = BrokerConfig::default();
        let mut table = default_table(&config);
        let bad = TopicConfig::new("a b", 4);
        assert!(apply(&mut table, TopicChange::Upsert(bad), &config, 1).is_err());
        let good = TopicConfig::new("Good", 4);
        assert!(
            apply(&mut table, TopicChange::Upsert(good), &config, 1)
                .unwrap()
                .1
        );
        let (_, removed) =
            apply(&mut table, TopicChange::Delete("Good".into()), &config, 2).unwrap();
        assert!(removed);
        assert!(!table.topic_config_table.contains_key("Good"));
    }
}
