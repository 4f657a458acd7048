//! What each request needs (Java's `PlainAccessResource.parse`): the
//! topics and groups it touches and the permission each must grant. A
//! group's resource is `%RETRY%{group}`.

use ferrocket_protocol::body::{decode_json, HeartbeatData};
use ferrocket_protocol::codes::request_code::*;
use ferrocket_protocol::header::SendMessageRequestView;
use ferrocket_protocol::RemotingCommand;

use crate::config::RETRY_PREFIX;
use crate::perm::{Perm, PUB, SUB};

/// Requests only an admin account may make (Java's `Permission.ADMIN_CODE`
/// and the 5.3 additions: static topics, ACL config updates), and
/// Ferrocket's broker-to-broker HAND_BACK.
const ADMIN_CODES: [i32; 10] = [
    UPDATE_AND_CREATE_TOPIC,
    UPDATE_BROKER_CONFIG,
    DELETE_TOPIC_IN_BROKER,
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    DELETE_SUBSCRIPTIONGROUP,
    513, // UPDATE_AND_CREATE_STATIC_TOPIC
    50,  // UPDATE_AND_CREATE_ACL_CONFIG
    51,  // DELETE_ACL_CONFIG
    52,  // GET_BROKER_CLUSTER_ACL_INFO
    HAND_BACK,
];

/// ACL 2.0's user and ACL requests (AUTH_CREATE_USER .. AUTH_LIST_ACL):
/// their answers hold passwords.
const AUTH_CODES: std::ops::RangeInclusive<i32> = 3001..=3010;

pub(crate) fn is_admin_code(code: i32) -> bool {
    ADMIN_CODES.contains(&code) || AUTH_CODES.contains(&code)
}

/// (resource, permission needed) for each thing `request` touches.
pub(crate) fn needs(request: &RemotingCommand) -> Result<Vec<(String, Perm)>, String> {
    let ext = &request.ext_fields;
    let mut needs = Vec::new();
    let mut topic = |name: Option<&str>, perm: Perm| {
        if let Some(name) = name {
            let perm = if name.starts_with(RETRY_PREFIX) {
                SUB
            } else {
                perm
            };
            needs.push((name.to_string(), perm));
        }
    };
    match request.code {
        // The topic as the send handler reads it (either name, V1's or
        // V2's), so the checked topic is the one written to.
        SEND_MESSAGE | SEND_MESSAGE_V2 | SEND_BATCH_MESSAGE => {
            let header = SendMessageRequestView::from_ext(ext)
                .map_err(|e| format!("cannot read the send header: {e}"))?;
            topic(Some(header.topic), PUB)
        }
        // LITE_PULL_MESSAGE is not in Java's ACL 1.0 list (it came later);
        // it reads what a pull reads, so it needs what a pull needs.
        PULL_MESSAGE | LITE_PULL_MESSAGE | UPDATE_CONSUMER_OFFSET | QUERY_MESSAGE => {
            topic(ext.get("topic"), SUB)
        }
        // Pop consumption: not checked by Java's ACL 1.0 (which predates
        // it); here it needs what a pull needs.
        POP_MESSAGE
        | POP_LITE_MESSAGE
        | PEEK_MESSAGE
        | ACK_MESSAGE
        | CHANGE_MESSAGE_INVISIBLETIME
        | NOTIFICATION => topic(ext.get("topic"), SUB),
        // The lite admin reads: SUB on the lite parent topic they name
        // (ACL 1.0 has no Get; reads of a group's data need SUB as
        // GET_CONSUME_STATS does).
        GET_PARENT_TOPIC_INFO => topic(ext.get("topic"), SUB),
        GET_LITE_TOPIC_INFO | GET_LITE_CLIENT_INFO => topic(ext.get("parentTopic"), SUB),
        _ => {}
    }
    let group = match request.code {
        CONSUMER_SEND_MSG_BACK => ext.get("group"),
        PULL_MESSAGE
        | LITE_PULL_MESSAGE
        | UPDATE_CONSUMER_OFFSET
        | UNREGISTER_CLIENT
        | GET_CONSUMER_LIST_BY_GROUP
        | POP_MESSAGE
        | POP_LITE_MESSAGE
        | PEEK_MESSAGE
        | ACK_MESSAGE
        | CHANGE_MESSAGE_INVISIBLETIME
        | NOTIFICATION => ext.get("consumerGroup"),
        GET_SUBSCRIPTIONGROUP_CONFIG
        | GET_LITE_CLIENT_INFO
        | GET_LITE_GROUP_INFO
        | TRIGGER_LITE_DISPATCH => ext.get("group"),
        _ => None,
    };
    if let Some(group) = group {
        needs.push((format!("{RETRY_PREFIX}{group}"), SUB));
    }
    // Beyond Java's ACL 1.0: the table's header rules.
    crate::stored::header_needs(request, &mut needs);
    match request.code {
        HEART_BEAT => heartbeat_needs(request, &mut needs)?,
        BATCH_ACK_MESSAGE => batch_ack_needs(request, &mut needs)?,
        LITE_SUBSCRIPTION_CTL => lite_ctl_needs(request, &mut needs)?,
        _ => {}
    }
    Ok(needs)
}

/// A lite subscription change's groups and parent topics (`group` and
/// `topic` of each entry of `subscriptionSet`), SUB each.
fn lite_ctl_needs(
    request: &RemotingCommand,
    needs: &mut Vec<(String, Perm)>,
) -> Result<(), String> {
    let body: serde_json::Value = serde_json::from_slice(&request.body)
        .map_err(|e| format!("cannot read the LITE_SUBSCRIPTION_CTL body: {e}"))?;
    let entries = body["subscriptionSet"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for entry in entries {
        let (Some(group), Some(topic)) = (entry["group"].as_str(), entry["topic"].as_str()) else {
            return Err("a LITE_SUBSCRIPTION_CTL entry without its group or topic".into());
        };
        needs.push((format!("{RETRY_PREFIX}{group}"), SUB));
        needs.push((topic.to_string(), SUB));
    }
    Ok(())
}

/// A batch ack's groups and topics (`c` and `t` of each entry), SUB each.
fn batch_ack_needs(
    request: &RemotingCommand,
    needs: &mut Vec<(String, Perm)>,
) -> Result<(), String> {
    let body: serde_json::Value = serde_json::from_slice(&request.body)
        .map_err(|e| format!("cannot read the BATCH_ACK_MESSAGE body: {e}"))?;
    let acks = body["acks"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for ack in acks {
        let (Some(group), Some(topic)) = (ack["c"].as_str(), ack["t"].as_str()) else {
            return Err("a BATCH_ACK_MESSAGE entry without its group (c) or topic (t)".into());
        };
        needs.push((format!("{RETRY_PREFIX}{group}"), SUB));
        needs.push((topic.to_string(), SUB));
    }
    Ok(())
}

/// A heartbeat's consumer groups and their subscribed topics, SUB each.
fn heartbeat_needs(
    request: &RemotingCommand,
    needs: &mut Vec<(String, Perm)>,
) -> Result<(), String> {
    let data: HeartbeatData =
        decode_json(&request.body).map_err(|e| format!("cannot read the HEART_BEAT body: {e}"))?;
    for consumer in &data.consumer_data_set {
        needs.push((format!("{RETRY_PREFIX}{}", consumer.group_name), SUB));
        for subscription in &consumer.subscription_data_set {
            needs.push((subscription.topic.clone(), SUB));
        }
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
        let perm = |p: Perm| if p == SUB { "SUB" } else { "PUB" };
        needs(&request)
            .unwrap()
            .into_iter()
            .map(|(name, p)| format!("{name} {}", perm(p)))
            .collect()
    }

    #[test]
    fn lite_requests_need_their_topics_and_groups() {
        let pop = [("consumerGroup", "G1"), ("topic", "P1"), ("clientId", "c")];
        assert_eq!(
            needs_of(POP_LITE_MESSAGE, &pop, ""),
            ["P1 SUB", "%RETRY%G1 SUB"]
        );
        let ctl = r#"{"subscriptionSet":[{"action":"PARTIAL_ADD","clientId":"c","group":"G1",
            "topic":"P1","liteTopicSet":["a"]}]}"#;
        assert_eq!(
            needs_of(LITE_SUBSCRIPTION_CTL, &[], ctl),
            ["%RETRY%G1 SUB", "P1 SUB"]
        );
        let unnamed = RemotingCommand::request(LITE_SUBSCRIPTION_CTL).with_body(
            Bytes::from_static(br#"{"subscriptionSet":[{"action":"x"}]}"#),
        );
        assert!(needs(&unnamed).is_err());
        assert_eq!(
            needs_of(GET_SUBSCRIPTIONGROUP_CONFIG, &[("group", "G1")], ""),
            ["%RETRY%G1 SUB"]
        );
        let client = [("parentTopic", "P1"), ("group", "G1"), ("clientId", "c")];
        assert_eq!(
            needs_of(GET_LITE_CLIENT_INFO, &client, ""),
            ["P1 SUB", "%RETRY%G1 SUB"]
        );
        assert_eq!(
            needs_of(GET_PARENT_TOPIC_INFO, &[("topic", "P1")], ""),
            ["P1 SUB"]
        );
        assert_eq!(
            needs_of(TRIGGER_LITE_DISPATCH, &[("group", "G1")], ""),
            ["%RETRY%G1 SUB"]
        );
    }

    #[test]
    fn hand_back_is_for_admins() {
        assert!(is_admin_code(HAND_BACK));
        assert!(!is_admin_code(POP_LITE_MESSAGE));
    }
}
