//! What a Remoting request does, as ACL 2.0 checks it (Java's
//! `DefaultAuthorizationContextBuilder` and the `@RocketMQAction`
//! annotations of the request headers): each topic, group or cluster it
//! touches and the actions of which any one suffices. A retry topic
//! (`%RETRY%g`) is the group `g`. A request not listed needs nothing past
//! authentication, as in Java.
//!
//! Stricter than Java where Java lets an ordinary user change or read what
//! is not theirs: UPDATE_BROKER_CONFIG needs Update on the cluster,
//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP Create or Update on the group, and
//! BATCH_ACK_MESSAGE Sub on each group and topic it acks (Java checks none
//! of them); a pull or offset request naming another group's retry topic
//! needs Sub on that group (Java skips retry topics there). A send to a retry topic needs Sub on the topic's group (Java
//! takes the producer group named in the header, which for the clients'
//! fallback send is their inner producer's).

use ferrocket_protocol::body::{decode_json, HeartbeatData};
use ferrocket_protocol::codes::request_code::*;
use ferrocket_protocol::RemotingCommand;

use super::check::Need;
use super::model::{Action, ResourceType};
use crate::config::RETRY_PREFIX;

use Action::{Create, Delete, Get, Pub, Sub, Update};

/// Request codes of the admin requests for users and ACLs.
pub mod auth_code {
    pub const AUTH_CREATE_USER: i32 = 3001;
    pub const AUTH_UPDATE_USER: i32 = 3002;
    pub const AUTH_DELETE_USER: i32 = 3003;
    pub const AUTH_GET_USER: i32 = 3004;
    pub const AUTH_LIST_USER: i32 = 3005;
    pub const AUTH_CREATE_ACL: i32 = 3006;
    pub const AUTH_UPDATE_ACL: i32 = 3007;
    pub const AUTH_DELETE_ACL: i32 = 3008;
    pub const AUTH_GET_ACL: i32 = 3009;
    pub const AUTH_LIST_ACL: i32 = 3010;
}

const GET_PRODUCER_CONNECTION_LIST: i32 = 204;
const GET_ALL_PRODUCER_INFO: i32 = 328;
const RECALL_MESSAGE: i32 = 370;

/// The needs being gathered for one request.
struct Needs<'a> {
    request: &'a RemotingCommand,
    out: Vec<Need>,
}

impl Needs<'_> {
    fn field(&self, name: &str) -> Option<&str> {
        self.request
            .ext_fields
            .get(name)
            .map(str::trim)
            .filter(|v| !v.is_empty())
    }

    /// A topic (a retry topic: its group) from a header field.
    fn topic(&mut self, field: &str, actions: &[Action]) {
        if let Some(name) = self.field(field).map(str::to_string) {
            self.topic_named(&name, actions);
        }
    }

    fn topic_named(&mut self, name: &str, actions: &[Action]) {
        match name.strip_prefix(RETRY_PREFIX) {
            Some(group) => self
                .out
                .push(Need::new(ResourceType::Group, group, actions)),
            None => self.out.push(Need::new(ResourceType::Topic, name, actions)),
        }
    }

    fn group(&mut self, field: &str, actions: &[Action]) {
        if let Some(name) = self.field(field).map(str::to_string) {
            self.group_named(&name, actions);
        }
    }

    fn group_named(&mut self, name: &str, actions: &[Action]) {
        let name = name.strip_prefix(RETRY_PREFIX).unwrap_or(name);
        self.out.push(Need::new(ResourceType::Group, name, actions));
    }
}

/// What `request` needs; `cluster` names the broker's cluster (the
/// resource of cluster-wide requests). An error: a body or header that
/// cannot be read, refused as Java refuses it.
pub fn remoting_needs(request: &RemotingCommand, cluster: &str) -> Result<Vec<Need>, String> {
    let mut needs = Needs {
        request,
        out: Vec::new(),
    };
    let n = &mut needs;
    match request.code {
        SEND_MESSAGE
        | SEND_MESSAGE_V2
        | SEND_BATCH_MESSAGE
        | SEND_REPLY_MESSAGE
        | SEND_REPLY_MESSAGE_V2 => {
            // The send header's topic: its Java name wins over V2's `b`,
            // as the send handler reads it.
            let fields = &request.ext_fields;
            let topic = fields
                .get("topic")
                .or_else(|| fields.get("b"))
                .ok_or("parse authorization context error: the send names no topic")?;
            let actions: &[Action] = if topic.starts_with(RETRY_PREFIX) {
                &[Sub]
            } else {
                &[Pub]
            };
            n.topic_named(topic, actions);
        }
        END_TRANSACTION | RECALL_MESSAGE => n.topic("topic", &[Pub]),
        CONSUMER_SEND_MSG_BACK => n.group("group", &[Sub]),
        PULL_MESSAGE | LITE_PULL_MESSAGE => {
            n.topic("topic", &[Sub]);
            n.group("consumerGroup", &[Sub]);
        }
        QUERY_MESSAGE => n.topic("topic", &[Sub, Get]),
        HEART_BEAT => heartbeat_needs(n)?,
        UNREGISTER_CLIENT => n.group("consumerGroup", &[Sub]),
        GET_CONSUMER_LIST_BY_GROUP => n.group("consumerGroup", &[Sub, Get]),
        QUERY_CONSUMER_OFFSET => {
            n.topic("topic", &[Sub, Get]);
            n.group("consumerGroup", &[Sub, Get]);
        }
        UPDATE_CONSUMER_OFFSET => {
            n.topic("topic", &[Sub, Update]);
            n.group("consumerGroup", &[Sub, Update]);
        }
        CONSUME_MESSAGE_DIRECTLY => {
            n.group("consumerGroup", &[Sub]);
            n.topic("topic", &[Sub]);
        }
        LOCK_BATCH_MQ | UNLOCK_BATCH_MQ => lock_needs(n)?,
        POP_MESSAGE
        | POP_LITE_MESSAGE
        | PEEK_MESSAGE
        | ACK_MESSAGE
        | CHANGE_MESSAGE_INVISIBLETIME
        | NOTIFICATION
        | POLLING_INFO => {
            n.group("consumerGroup", &[Sub]);
            n.topic("topic", &[Sub]);
        }
        BATCH_ACK_MESSAGE => batch_ack_needs(n)?,
        LITE_SUBSCRIPTION_CTL => lite_ctl_needs(n)?,
        code => admin_needs(n, code, cluster)?,
    }
    needs.out.dedup();
    Ok(needs.out)
}

/// The admin requests: reading (Get), making (Create), removing (Delete)
/// and changing (Update) topics, groups and the cluster.
fn admin_needs(n: &mut Needs, code: i32, cluster: &str) -> Result<(), String> {
    use auth_code::*;
    match code {
        VIEW_MESSAGE_BY_ID
        | GET_TOPIC_CONFIG
        | GET_TOPIC_STATS_INFO
        | GET_MIN_OFFSET
        | GET_MAX_OFFSET
        | SEARCH_OFFSET_BY_TIMESTAMP
        | GET_EARLIEST_MSG_STORETIME
        | QUERY_TOPIC_CONSUME_BY_WHO => n.topic("topic", &[Get]),
        GET_CONSUME_STATS => {
            n.group("consumerGroup", &[Get]);
            n.topic("topic", &[Get]);
        }
        GET_SUBSCRIPTIONGROUP_CONFIG | QUERY_TOPICS_BY_CONSUMER | GET_LITE_GROUP_INFO => {
            n.group("group", &[Get])
        }
        GET_PARENT_TOPIC_INFO => n.topic("topic", &[Get]),
        GET_LITE_TOPIC_INFO => n.topic("parentTopic", &[Get]),
        GET_LITE_CLIENT_INFO => {
            n.topic("parentTopic", &[Get]);
            n.group("group", &[Get]);
        }
        TRIGGER_LITE_DISPATCH => n.group("group", &[Update]),
        GET_CONSUMER_CONNECTION_LIST | GET_CONSUMER_RUNNING_INFO => {
            n.group("consumerGroup", &[Get])
        }
        UPDATE_AND_CREATE_TOPIC => n.topic("topic", &[Create]),
        DELETE_TOPIC_IN_BROKER => n.topic("topic", &[Delete]),
        DELETE_SUBSCRIPTIONGROUP => n.group("groupName", &[Delete]),
        UPDATE_AND_CREATE_SUBSCRIPTIONGROUP => {
            let body = json_body(n)?;
            let group = body["groupName"].as_str().unwrap_or("").trim().to_string();
            if !group.is_empty() {
                n.group_named(&group, &[Create, Update]);
            }
        }
        INVOKE_BROKER_TO_RESET_OFFSET => {
            n.group("group", &[Update]);
            n.topic("topic", &[Update]);
        }
        GET_PRODUCER_CONNECTION_LIST
        | GET_ALL_PRODUCER_INFO
        | VIEW_BROKER_STATS_DATA
        | GET_BROKER_CONSUME_STATS
        | GET_BROKER_LITE_INFO
        | AUTH_GET_USER
        | AUTH_LIST_USER
        | AUTH_GET_ACL
        | AUTH_LIST_ACL => n
            .out
            .push(Need::new(ResourceType::Cluster, cluster, &[Get])),
        UPDATE_BROKER_CONFIG | HAND_BACK | AUTH_CREATE_USER | AUTH_UPDATE_USER
        | AUTH_DELETE_USER | AUTH_CREATE_ACL | AUTH_UPDATE_ACL | AUTH_DELETE_ACL => n
            .out
            .push(Need::new(ResourceType::Cluster, cluster, &[Update])),
        _ => {}
    }
    Ok(())
}

/// Each consumer group of a heartbeat and the topics it subscribes to
/// (retry topics left out); producers need nothing.
fn heartbeat_needs(n: &mut Needs) -> Result<(), String> {
    let data: HeartbeatData = decode_json(&n.request.body)
        .map_err(|e| format!("parse authorization context error: the heartbeat: {e}"))?;
    for consumer in &data.consumer_data_set {
        n.group_named(&consumer.group_name, &[Sub]);
        for subscription in &consumer.subscription_data_set {
            if !subscription.topic.starts_with(RETRY_PREFIX) {
                n.out
                    .push(Need::new(ResourceType::Topic, &subscription.topic, &[Sub]));
            }
        }
    }
    Ok(())
}

/// The request's JSON body.
fn json_body(n: &Needs) -> Result<serde_json::Value, String> {
    serde_json::from_slice(&n.request.body)
        .map_err(|e| format!("parse authorization context error: the body: {e}"))
}

/// A lock body's group, and the topic of each queue it names.
fn lock_needs(n: &mut Needs) -> Result<(), String> {
    let body = json_body(n)?;
    if let Some(group) = body["consumerGroup"]
        .as_str()
        .filter(|g| !g.trim().is_empty())
    {
        n.group_named(group.trim(), &[Sub]);
    }
    let queues = body["mqSet"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for queue in queues {
        if let Some(topic) = queue["topic"]
            .as_str()
            .filter(|t| !t.starts_with(RETRY_PREFIX))
        {
            n.out.push(Need::new(ResourceType::Topic, topic, &[Sub]));
        }
    }
    Ok(())
}

/// Each lite subscription change's group and parent topic (Java refuses
/// an empty change set).
fn lite_ctl_needs(n: &mut Needs) -> Result<(), String> {
    let body = json_body(n)?;
    let entries = body["subscriptionSet"]
        .as_array()
        .filter(|e| !e.is_empty())
        .ok_or("parse authorization context error: lite subscription is empty")?;
    for entry in entries {
        let (Some(group), Some(topic)) = (entry["group"].as_str(), entry["topic"].as_str()) else {
            return Err(
                "parse authorization context error: a lite subscription without its group or topic"
                    .into(),
            );
        };
        n.group_named(group, &[Sub]);
        n.topic_named(topic, &[Sub]);
    }
    Ok(())
}

/// Each acked entry's group (`c`) and topic (`t`).
fn batch_ack_needs(n: &mut Needs) -> Result<(), String> {
    let body = json_body(n)?;
    let acks = body["acks"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for ack in acks {
        let (Some(group), Some(topic)) = (ack["c"].as_str(), ack["t"].as_str()) else {
            return Err(
                "parse authorization context error: an ack without its group (c) or topic (t)"
                    .into(),
            );
        };
        n.group_named(group, &[Sub]);
        n.topic_named(topic, &[Sub]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn needs_of(code: i32, fields: &[(&str, &str)], body: &str) -> Vec<String> {
        let mut request = RemotingCommand::request(code).with_body(Bytes::from(body.to_string()));
        for (k, v) in fields {
            request.ext_fields.insert(*k, *v);
        }
        remoting_needs(&request, "DefaultCluster")
            .unwrap()
            .iter()
            .map(|n| {
                let actions: Vec<&str> = n.actions.iter().map(|a| a.name()).collect();
                format!("{} {}", n.resource, actions.join(","))
            })
            .collect()
    }

    #[test]
    fn requests_need_what_javas_builder_says() {
        // The send header's topic is all the check reads.
        let send = [("a", "PG"), ("b", "T1")];
        assert_eq!(needs_of(SEND_MESSAGE_V2, &send, ""), ["Topic:T1 Pub"]);
        let retry = [("a", "PG"), ("b", "%RETRY%G1")];
        assert_eq!(needs_of(SEND_MESSAGE_V2, &retry, ""), ["Group:G1 Sub"]);
        let pull = [("topic", "%RETRY%G1"), ("consumerGroup", "G1")];
        assert_eq!(needs_of(PULL_MESSAGE, &pull, ""), ["Group:G1 Sub"]);
        // Another group's retry topic needs that group too.
        let theirs = [("topic", "%RETRY%G2"), ("consumerGroup", "G1")];
        assert_eq!(
            needs_of(PULL_MESSAGE, &theirs, ""),
            ["Group:G2 Sub", "Group:G1 Sub"]
        );
        let direct = [("consumerGroup", "G1"), ("topic", "T1"), ("msgId", "x")];
        assert_eq!(
            needs_of(CONSUME_MESSAGE_DIRECTLY, &direct, ""),
            ["Group:G1 Sub", "Topic:T1 Sub"]
        );
        let offset = [("topic", "T1"), ("consumerGroup", "G1")];
        assert_eq!(
            needs_of(UPDATE_CONSUMER_OFFSET, &offset, ""),
            ["Topic:T1 Sub,Update", "Group:G1 Sub,Update"]
        );
        let heartbeat = r#"{"clientID":"c","consumerDataSet":[{"groupName":"G1","consumeType":"CONSUME_PASSIVELY",
            "messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","unitMode":false,
            "subscriptionDataSet":[{"topic":"T1","subString":"*"},{"topic":"%RETRY%G1","subString":"*"}]}],
            "producerDataSet":[{"groupName":"PG"}]}"#;
        assert_eq!(
            needs_of(HEART_BEAT, &[], heartbeat),
            ["Group:G1 Sub", "Topic:T1 Sub"]
        );
        let lock = r#"{"consumerGroup":"G1","clientId":"c","mqSet":[{"topic":"T1","brokerName":"b","queueId":0}]}"#;
        assert_eq!(
            needs_of(LOCK_BATCH_MQ, &[], lock),
            ["Group:G1 Sub", "Topic:T1 Sub"]
        );
        assert_eq!(
            needs_of(UPDATE_AND_CREATE_TOPIC, &[("topic", "T9")], ""),
            ["Topic:T9 Create"]
        );
        assert_eq!(
            needs_of(auth_code::AUTH_CREATE_USER, &[("username", "u")], ""),
            ["Cluster:DefaultCluster Update"]
        );
        assert_eq!(
            needs_of(auth_code::AUTH_LIST_ACL, &[], ""),
            ["Cluster:DefaultCluster Get"]
        );
        assert!(needs_of(GET_BROKER_RUNTIME_INFO, &[], "").is_empty());
        let ack = r#"{"acks":[{"c":"G1","t":"T1","q":0,"so":0,"ot":0,"pt":0,"it":0,"b":"x","r":"0","n":"b","ob":[]}]}"#;
        assert_eq!(
            needs_of(BATCH_ACK_MESSAGE, &[], ack),
            ["Group:G1 Sub", "Topic:T1 Sub"]
        );
    }

    #[test]
    fn lite_requests_need_what_javas_builder_says() {
        let pop = [("consumerGroup", "G1"), ("topic", "P1"), ("clientId", "c")];
        assert_eq!(
            needs_of(POP_LITE_MESSAGE, &pop, ""),
            ["Group:G1 Sub", "Topic:P1 Sub"]
        );
        let ctl = r#"{"subscriptionSet":[{"action":"PARTIAL_ADD","clientId":"c","group":"G1",
            "topic":"P1","liteTopicSet":["a"]},{"action":"PARTIAL_ADD","clientId":"c",
            "group":"G2","topic":"P1","liteTopicSet":["b"]}]}"#;
        assert_eq!(
            needs_of(LITE_SUBSCRIPTION_CTL, &[], ctl),
            [
                "Group:G1 Sub",
                "Topic:P1 Sub",
                "Group:G2 Sub",
                "Topic:P1 Sub"
            ]
        );
        let empty = RemotingCommand::request(LITE_SUBSCRIPTION_CTL)
            .with_body(Bytes::from_static(br#"{"subscriptionSet":[]}"#));
        assert!(remoting_needs(&empty, "c").is_err());
        assert_eq!(
            needs_of(GET_BROKER_LITE_INFO, &[], ""),
            ["Cluster:DefaultCluster Get"]
        );
        assert_eq!(
            needs_of(GET_PARENT_TOPIC_INFO, &[("topic", "P1")], ""),
            ["Topic:P1 Get"]
        );
        let client = [("parentTopic", "P1"), ("group", "G1"), ("clientId", "c")];
        assert_eq!(
            needs_of(GET_LITE_CLIENT_INFO, &client, ""),
            ["Topic:P1 Get", "Group:G1 Get"]
        );
        assert_eq!(
            needs_of(GET_LITE_GROUP_INFO, &[("group", "G1")], ""),
            ["Group:G1 Get"]
        );
        assert_eq!(
            needs_of(GET_SUBSCRIPTIONGROUP_CONFIG, &[("group", "G1")], ""),
            ["Group:G1 Get"]
        );
        assert_eq!(
            needs_of(TRIGGER_LITE_DISPATCH, &[("group", "G1")], ""),
            ["Group:G1 Update"]
        );
        assert_eq!(
            needs_of(HAND_BACK, &[("brokerAddr", "m:1")], ""),
            ["Cluster:DefaultCluster Update"]
        );
    }

    #[test]
    fn unreadable_bodies_are_refused() {
        let request = RemotingCommand::request(HEART_BEAT).with_body(Bytes::from_static(b"{"));
        assert!(remoting_needs(&request, "c")
            .unwrap_err()
            .starts_with("parse authorization context error"));
    }
}
