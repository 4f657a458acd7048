//! The broker's limits settings, each declared once (see `keys`).

use super::*;

pub(super) static LIMITS: &[Decl<BrokerConfig>] = &[
    decl!(
        "autoCreateTopicEnable",
        "`true`",
        online,
        "create unknown topics on first send from TBW102",
        |c, k, s| c.auto_create_topic_enable = parse_bool(k, s)?,
        |c| yes(c.auto_create_topic_enable),
    ),
    decl!(
        "clusterTopicEnable",
        "`true`",
        start,
        "the cluster name topic takes sends and pulls; `false`: only a template",
        |c, k, s| c.cluster_topic_enable = parse_bool(k, s)?,
        |c| yes(c.cluster_topic_enable),
    ),
    decl!(
        "brokerTopicEnable",
        "`true`",
        start,
        "the broker name topic takes sends and pulls (mqadmin `sendMsgStatus`, `clusterRT`); `false`: only a template",
        |c, k, s| c.broker_topic_enable = parse_bool(k, s)?,
        |c| yes(c.broker_topic_enable),
    ),
    decl!(
        "defaultTopicQueueNums",
        "8",
        start,
        "queues of a topic auto-created by a client that does not say how many",
        |c, k, s| c.default_topic_queue_nums = parse_value(k, s)?,
        |c| c.default_topic_queue_nums.to_string(),
    ),
    decl!(
        "topicCountMax",
        "200000",
        start,
        "most topics on the broker (Ferrocket key)",
        |c, k, s| c.topic_count_max = positive_count(k, s)?,
        |c| c.topic_count_max.to_string(),
    ),
    decl!(
        "subscriptionGroupCountMax",
        "100000",
        start,
        "most subscription groups on the broker (Ferrocket key)",
        |c, k, s| c.subscription_group_count_max = positive_count(k, s)?,
        |c| c.subscription_group_count_max.to_string(),
    ),
    decl!(
        "clientsPerGroupMax",
        "10000",
        start,
        "most clients in one group (Ferrocket key)",
        |c, k, s| c.clients_per_group_max = positive_count(k, s)?,
        |c| c.clients_per_group_max.to_string(),
    ),
    decl!(
        "autoCreateSubscriptionGroup",
        "`true`",
        online,
        "create unknown consumer groups on first use",
        |c, k, s| c.auto_create_subscription_group = parse_bool(k, s)?,
        |c| yes(c.auto_create_subscription_group),
    ),
];

/// The Remoting server's limits, declared in `ferrocket_runtime`.
pub(super) static SERVER_LIMITS: &[Decl<BrokerConfig>] =
    ferrocket_runtime::server_limit_settings!(server_limits);
