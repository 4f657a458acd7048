//! The check of a request against the users and ACLs: who sent it (Java's
//! `DefaultAuthenticationHandler`: the ACL 1.0 signature, keyed by the
//! user's password) and whether the user may do what it asks
//! (`UserAuthorizationHandler`, `AclAuthorizationHandler`).
//!
//! The decision for one resource: a super user may do anything. Otherwise
//! the user's Custom entries that cover the resource, the action and the
//! address are looked at, and only when none does its Default ones; none
//! at all is a refusal. Of those that match, the most specific decides: a
//! typed resource before `*`, a literal name before a prefix before
//! `Type:*`, a longer prefix before a shorter one, Allow before Deny.

use std::cmp::Ordering;
use std::net::IpAddr;

use ferrocket_protocol::RemotingCommand;

use super::metadata::AuthMetadata;
use super::model::*;
use crate::signature::{verify, ACCESS_KEY, SIGNATURE};
use crate::Denied;

/// One thing a request does: the resource, and the actions of which any
/// one suffices (Java's `DefaultAuthorizationContext`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub resource: Resource,
    pub actions: Vec<Action>,
}

impl Need {
    pub fn new(kind: ResourceType, name: &str, actions: &[Action]) -> Need {
        Need {
            resource: Resource::literal(kind, name),
            actions: actions.to_vec(),
        }
    }
}

impl AuthMetadata {
    /// The user who signed `request` (its `AccessKey`), once the signature
    /// is checked against the user's password.
    pub fn authenticate(&self, request: &RemotingCommand) -> Result<&User, Denied> {
        let username = request
            .ext_fields
            .get(ACCESS_KEY)
            .filter(|k| !k.is_empty())
            .ok_or_else(|| Denied("username cannot be null.".into()))?;
        let user = self.signer(username)?;
        let signature = request.ext_fields.get(SIGNATURE).unwrap_or("");
        if !verify(request, &user.password, signature) {
            return Err(Denied("check signature failed.".into()));
        }
        Ok(user)
    }

    /// An enabled user named `username`.
    pub fn signer(&self, username: &str) -> Result<&User, Denied> {
        let user = self
            .user(username)
            .ok_or_else(|| Denied(format!("User:{username} is not found.")))?;
        if user.user_status == UserStatus::Disable {
            return Err(Denied(format!("User:{username} is disabled.")));
        }
        Ok(user)
    }

    /// Whether the user named `username` (none: the request was not signed)
    /// may do each of `needs` from `peer`.
    pub fn authorize(
        &self,
        username: Option<&str>,
        needs: &[Need],
        peer: IpAddr,
    ) -> Result<(), Denied> {
        if needs.is_empty() {
            return Ok(());
        }
        let Some(username) = username.filter(|u| !u.is_empty()) else {
            return Err(Denied(
                "Authorization failed. Please verify your access rights and try again.".into(),
            ));
        };
        let user = self
            .user(username)
            .ok_or_else(|| Denied(format!("User:{username} not found.")))?;
        if user.user_type == UserType::Super {
            return Ok(());
        }
        let subject = subject_of(username);
        let acl = self.acl(&subject);
        needs.iter().try_for_each(|need| {
            decide(acl, need, peer).map_err(|why| refusal(&subject, need, peer, why))
        })
    }
}

fn refusal(subject: &str, need: &Need, peer: IpAddr, why: &str) -> Denied {
    let peer = peer.to_canonical();
    Denied(format!(
        "{subject} has no permission to access {} from {peer}, {why}",
        need.resource
    ))
}

const NO_MATCH: &str = "no matched policies.";
const DENIED: &str = "the decision is deny.";

/// The decision of `acl` for one need; the error is why it is a refusal.
fn decide(acl: Option<&Acl>, need: &Need, peer: IpAddr) -> Result<(), &'static str> {
    let acl = acl.ok_or(NO_MATCH)?;
    let best = |policy_type: PolicyType| {
        acl.policies
            .iter()
            .filter(|p| p.policy_type == policy_type)
            .flat_map(|p| &p.entries)
            .filter(|e| matches(e, need, peer))
            .min_by(|a, b| precedence(a, b))
    };
    let best = best(PolicyType::Custom)
        .or_else(|| best(PolicyType::Default))
        .ok_or(NO_MATCH)?;
    match best.decision {
        Decision::Allow => Ok(()),
        Decision::Deny => Err(DENIED),
    }
}

fn matches(entry: &Entry, need: &Need, peer: IpAddr) -> bool {
    let actions = !entry.actions.is_empty()
        && (need.actions.contains(&Action::Any)
            || entry.actions.contains(&Action::All)
            || need.actions.iter().any(|a| entry.actions.contains(a)));
    let address =
        entry.source_ips.is_empty() || entry.source_ips.iter().any(|ip| ip.contains(peer));
    actions && address && entry.resource.covers(&need.resource)
}

/// Which of two matching entries decides (the lesser).
fn precedence(a: &Entry, b: &Entry) -> Ordering {
    let (ra, rb) = (&a.resource, &b.resource);
    let any_type = |r: &Resource| r.kind == ResourceType::Any;
    let pattern_rank = |r: &Resource| match r.pattern {
        Pattern::Literal => 0,
        Pattern::Prefixed => 1,
        Pattern::Any => 2,
    };
    let decision_rank = |e: &Entry| (e.decision == Decision::Deny) as u8;
    any_type(ra)
        .cmp(&any_type(rb))
        .then(pattern_rank(ra).cmp(&pattern_rank(rb)))
        .then(rb.name.len().cmp(&ra.name.len()))
        .then(decision_rank(a).cmp(&decision_rank(b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sign_request;

    fn store(
        entries: &[(&str, &[&str], &str)],
        defaults: &[(&str, &[&str], &str)],
    ) -> AuthMetadata {
        let mut meta = AuthMetadata::default();
        let info = |password: &str, kind: &str| UserInfo {
            password: Some(password.into()),
            user_type: Some(kind.into()),
            ..UserInfo::default()
        };
        meta.create_user(None, "alice", &info("secret1", "Normal"))
            .unwrap();
        meta.create_user(None, "root", &info("rootpw", "Super"))
            .unwrap();
        let policy = |policy_type: &str, list: &[(&str, &[&str], &str)]| PolicyInfo {
            policy_type: Some(policy_type.into()),
            entries: list
                .iter()
                .map(|(resource, actions, decision)| EntryInfo {
                    resource: Some(resource.to_string()),
                    actions: actions.iter().map(|a| a.to_string()).collect(),
                    source_ips: vec![],
                    decision: Some(decision.to_string()),
                })
                .collect(),
        };
        let info = AclInfo {
            subject: Some("User:alice".into()),
            policies: vec![policy("Custom", entries), policy("Default", defaults)],
        };
        meta.upsert_acl(info.to_acl(None).unwrap()).unwrap();
        meta
    }

    const PEER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 1, 2, 3));

    fn may(
        meta: &AuthMetadata,
        user: &str,
        kind: ResourceType,
        name: &str,
        action: Action,
    ) -> Result<(), String> {
        meta.authorize(Some(user), &[Need::new(kind, name, &[action])], PEER)
            .map_err(|d| d.0)
    }

    #[test]
    fn the_most_specific_matching_entry_decides() {
        let meta = store(
            &[
                ("Topic:*", &["Pub"], "Allow"),
                ("Topic:secret*", &["Pub"], "Deny"),
                ("Topic:secret-ok", &["Pub"], "Allow"),
                ("Topic:sec*", &["Pub"], "Allow"),
            ],
            &[("*", &["All"], "Allow")],
        );
        let topic = ResourceType::Topic;
        assert!(may(&meta, "alice", topic, "orders", Action::Pub).is_ok());
        assert_eq!(
            may(&meta, "alice", topic, "secret-x", Action::Pub).unwrap_err(),
            "User:alice has no permission to access Topic:secret-x from 10.1.2.3, the decision is deny."
        );
        assert!(may(&meta, "alice", topic, "secret-ok", Action::Pub).is_ok());
        assert!(may(&meta, "alice", topic, "seco", Action::Pub).is_ok());
        // No Custom entry grants Sub (matching takes the action too): the
        // Default policy decides.
        assert!(may(&meta, "alice", topic, "orders", Action::Sub).is_ok());
        assert!(may(&meta, "root", ResourceType::Cluster, "c", Action::Update).is_ok());
        assert_eq!(
            may(&meta, "nobody", topic, "t", Action::Pub).unwrap_err(),
            "User:nobody not found."
        );
    }

    #[test]
    fn no_entry_and_no_acl_refuse() {
        let meta = store(&[("Topic:a", &["Sub"], "Allow")], &[]);
        let refused = may(&meta, "alice", ResourceType::Topic, "a", Action::Pub).unwrap_err();
        assert!(refused.ends_with("no matched policies."), "{refused}");
        assert!(may(&meta, "alice", ResourceType::Topic, "a", Action::Sub).is_ok());
        let all = store(&[("Group:g", &["All"], "Allow")], &[]);
        assert!(may(&all, "alice", ResourceType::Group, "g", Action::Sub).is_ok());
        assert!(may(&all, "alice", ResourceType::Group, "h", Action::Sub).is_err());
        assert!(all
            .authorize(
                None,
                &[Need::new(ResourceType::Group, "g", &[Action::Sub])],
                PEER
            )
            .is_err());
        assert!(all.authorize(None, &[], PEER).is_ok());
    }

    #[test]
    fn signed_requests_are_checked_against_the_password() {
        let mut meta = store(&[], &[("*", &["All"], "Allow")]);
        let mut request = RemotingCommand::request(310);
        request.ext_fields.insert("b", "TopicA");
        assert_eq!(
            meta.authenticate(&request).unwrap_err().0,
            "username cannot be null."
        );
        sign_request(&mut request, "alice", "secret1");
        assert_eq!(meta.authenticate(&request).unwrap().username, "alice");
        let mut forged = request.clone();
        forged.ext_fields.insert("b", "TopicB");
        assert_eq!(
            meta.authenticate(&forged).unwrap_err().0,
            "check signature failed."
        );
        let mut stranger = RemotingCommand::request(310);
        sign_request(&mut stranger, "mallory", "x");
        assert_eq!(
            meta.authenticate(&stranger).unwrap_err().0,
            "User:mallory is not found."
        );
        let disable = UserInfo {
            user_status: Some("disable".into()),
            ..UserInfo::default()
        };
        meta.update_user(None, "alice", &disable).unwrap();
        assert_eq!(
            meta.authenticate(&request).unwrap_err().0,
            "User:alice is disabled."
        );
    }
}
