//! Requests that reach a stored message by its CommitLog offset or id
//! rather than by a topic the request names, or that name a topic Java's
//! ACL 1.0 does not check: the one table of request code → resource →
//! permission both ACLs apply beyond Java. A stored-message rule is
//! checked by the handler after it reads the message and before it
//! answers or acts on it, against the topic the message is stored under.

use std::net::IpAddr;

use ferrocket_protocol::codes::request_code::*;
use ferrocket_protocol::RemotingCommand;

use crate::auth::{Action, AuthMetadata, Need, ResourceType};
use crate::config::RETRY_PREFIX;
use crate::perm::{Perm, PUB, SUB};
use crate::Denied;

/// What a rule's permission is checked on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reached {
    /// The topic of the message the request reads by offset or id.
    StoredTopic,
    /// The topic named by this header field.
    HeaderTopic(&'static str),
    /// The consumer group named by this header field (`%RETRY%{group}`
    /// in ACL 1.0).
    HeaderGroup(&'static str),
}

/// One row: `code` reaches `reached`, which must grant ACL 1.0's `perm`
/// and ACL 2.0's `action`.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub code: i32,
    pub reached: Reached,
    pub perm: Perm,
    pub action: Action,
}

const fn rule(code: i32, reached: Reached, perm: Perm, action: Action) -> Rule {
    Rule {
        code,
        reached,
        perm,
        action,
    }
}

/// The table. Header rules for ACL 2.0 are in `remoting_needs` already
/// (Java's 5.3 list); ACL 1.0 takes them from here.
pub const RULES: &[Rule] = &[
    // The record at a CommitLog offset: a body of any topic.
    rule(VIEW_MESSAGE_BY_ID, Reached::StoredTopic, SUB, Action::Get),
    // Messages found by key: the handler keeps only the named topic's.
    rule(QUERY_MESSAGE, Reached::StoredTopic, SUB, Action::Sub),
    // Copies the record at an offset into the group's retry topic, where
    // the caller consumes it.
    rule(
        CONSUMER_SEND_MSG_BACK,
        Reached::StoredTopic,
        SUB,
        Action::Sub,
    ),
    // Commits (or rolls back) the half message at an offset into its real
    // topic (the REAL_TOPIC property), whatever the header's topic says.
    rule(END_TRANSACTION, Reached::StoredTopic, PUB, Action::Pub),
    // Hands the record at an offset to a client of the group, which
    // consumes it and answers with what it did.
    rule(
        CONSUME_MESSAGE_DIRECTLY,
        Reached::StoredTopic,
        SUB,
        Action::Sub,
    ),
    // Moves a group's offsets on a topic.
    rule(
        INVOKE_BROKER_TO_RESET_OFFSET,
        Reached::HeaderTopic("topic"),
        SUB,
        Action::Update,
    ),
    rule(
        INVOKE_BROKER_TO_RESET_OFFSET,
        Reached::HeaderGroup("group"),
        SUB,
        Action::Update,
    ),
    // A group's offsets and lag on a topic.
    rule(
        GET_CONSUME_STATS,
        Reached::HeaderTopic("topic"),
        SUB,
        Action::Get,
    ),
    rule(
        GET_CONSUME_STATS,
        Reached::HeaderGroup("consumerGroup"),
        SUB,
        Action::Get,
    ),
];

/// Whether `code` has a stored-message rule.
pub fn reads_stored(code: i32) -> bool {
    RULES
        .iter()
        .any(|r| r.code == code && r.reached == Reached::StoredTopic)
}

/// ACL 1.0's header needs of `request` from the table.
pub(crate) fn header_needs(request: &RemotingCommand, needs: &mut Vec<(String, Perm)>) {
    for rule in RULES.iter().filter(|r| r.code == request.code) {
        let field = match rule.reached {
            Reached::HeaderTopic(field) | Reached::HeaderGroup(field) => field,
            Reached::StoredTopic => continue,
        };
        let Some(name) = request.ext_fields.get(field) else {
            continue;
        };
        match rule.reached {
            Reached::HeaderGroup(_) => needs.push((format!("{RETRY_PREFIX}{name}"), rule.perm)),
            _ => needs.push((name.to_string(), rule.perm)),
        }
    }
}

/// The ACL 1.0 permission a stored topic needs for `code`; a retry topic
/// needs SUB on its group, as everywhere.
pub(crate) fn stored_perm(code: i32) -> Option<Perm> {
    RULES
        .iter()
        .find(|r| r.code == code && r.reached == Reached::StoredTopic)
        .map(|r| r.perm)
}

/// ACL 2.0: whether `username` may have what `request` reads from
/// `topic` (a retry topic: its group).
pub fn check_stored_v2(
    meta: &AuthMetadata,
    username: Option<&str>,
    request: &RemotingCommand,
    peer: IpAddr,
    topic: &str,
) -> Result<(), Denied> {
    let Some(rule) = RULES
        .iter()
        .find(|r| r.code == request.code && r.reached == Reached::StoredTopic)
    else {
        return Ok(());
    };
    let need = match topic.strip_prefix(RETRY_PREFIX) {
        Some(group) => Need::new(ResourceType::Group, group, &[Action::Sub]),
        None => Need::new(ResourceType::Topic, topic, &[rule.action]),
    };
    meta.authorize(username, &[need], peer)
}
