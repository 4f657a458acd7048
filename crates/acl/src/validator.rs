//! The check of one request (Java's `PlainPermissionManager.validate` and
//! `PlainPermissionChecker`), in Java's order: a globally white-listed
//! address passes; otherwise the account must exist; an account's own
//! white address passes; otherwise the signature must be right, then an
//! admin passes, admin-only requests are refused to others, and each
//! topic and group touched needs its permission (the account's entry for
//! it, else its default).

use std::net::IpAddr;

use ferrocket_protocol::RemotingCommand;

use crate::config::{Account, AclConfig, RETRY_PREFIX};
use crate::perm::{grants, Perm, PUB, SUB};
use crate::resources::{is_admin_code, needs};
use crate::signature::{verify, ACCESS_KEY, SIGNATURE};
use crate::stored::stored_perm;

/// How often the broker looks for changed ACL files (Java's watcher: 5 s).
pub const RELOAD_INTERVAL_MS: u64 = 5_000;
/// Sends to the trace topic pass whatever the account's permissions.
const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";

/// A refusal, with Java's words for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied(pub String);

/// Who sent a request, once its signature is checked.
pub(crate) enum Sender<'a> {
    /// A white-listed address: no account, no further check.
    WhiteListed,
    /// A signed request of this account.
    Account(&'a str, &'a Account),
}

impl AclConfig {
    /// Whether `request` from `peer` may go on.
    pub fn check(&self, request: &RemotingCommand, peer: IpAddr) -> Result<(), Denied> {
        // Authenticated first (Java reads the resources first): a body is
        // parsed only for a signed request of a known account.
        let (access_key, account) = match self.authenticate(request, peer)? {
            Sender::WhiteListed => return Ok(()),
            Sender::Account(key, account) => (key, account),
        };
        let resources = needs(request).map_err(Denied)?;
        if resources
            .iter()
            .any(|(name, perm)| name == TRACE_TOPIC && *perm == PUB)
            || account.admin
        {
            return Ok(());
        }
        if is_admin_code(request.code) {
            return Err(Denied(format!(
                "Need admin permission for request code={}, but accessKey={access_key} is not",
                request.code
            )));
        }
        grants_all(account, &resources)
    }

    /// For the name server's write requests (Ferrocket's own; Java's name
    /// server checks nothing): a white-listed address, or a signed request
    /// of an admin account.
    pub fn check_admin(&self, request: &RemotingCommand, peer: IpAddr) -> Result<(), Denied> {
        match self.authenticate(request, peer)? {
            Sender::Account(key, account) if !account.admin => Err(Denied(format!(
                "Need admin permission for request code={}, but accessKey={key} is not",
                request.code
            ))),
            _ => Ok(()),
        }
    }

    /// Java's first steps: white-listed addresses pass; otherwise a known
    /// account (or its own white address) and a right signature.
    pub(crate) fn authenticate<'a>(
        &'a self,
        request: &'a RemotingCommand,
        peer: IpAddr,
    ) -> Result<Sender<'a>, Denied> {
        if self.global_white.iter().any(|p| p.matches(peer)) {
            return Ok(Sender::WhiteListed);
        }
        let ext = &request.ext_fields;
        // An unsigned C++ client sends the field empty: the same as none.
        let access_key = ext
            .get(ACCESS_KEY)
            .filter(|key| !key.is_empty())
            .ok_or_else(|| Denied("No accessKey is configured".into()))?;
        let account = self
            .accounts
            .get(access_key)
            .ok_or_else(|| Denied(format!("No acl config for {access_key}")))?;
        if account.white_address.matches(peer) {
            return Ok(Sender::WhiteListed);
        }
        let signature = ext.get(SIGNATURE).unwrap_or("");
        if !verify(request, &account.secret_key, signature) {
            return Err(Denied(format!(
                "Check signature failed for accessKey={access_key}"
            )));
        }
        Ok(Sender::Account(access_key, account))
    }
}

/// Whether `account` grants each resource its permission: its entry for
/// the resource, else its default for topics or groups.
pub(crate) fn grants_all(account: &Account, resources: &[(String, Perm)]) -> Result<(), Denied> {
    for (name, needed) in resources {
        let is_group = name.starts_with(RETRY_PREFIX);
        let shown = match name.strip_prefix(RETRY_PREFIX) {
            Some(group) => format!("group:{group}"),
            None => format!("topic:{name}"),
        };
        match account.perms.get(name) {
            Some(owned) if !grants(*needed, *owned) => {
                return Err(Denied(format!("No permission for {shown}")));
            }
            Some(_) => {}
            None => {
                let default = match is_group {
                    true => account.default_group_perm,
                    false => account.default_topic_perm,
                };
                if !grants(*needed, default) {
                    return Err(Denied(format!("No default permission for {shown}")));
                }
            }
        }
    }
    Ok(())
}

impl AclConfig {
    /// ACL 1.0: whether the signer of `request` (already authenticated)
    /// may have what `request` reads from `topic`.
    pub fn check_stored(
        &self,
        request: &RemotingCommand,
        peer: IpAddr,
        topic: &str,
    ) -> Result<(), Denied> {
        let Some(perm) = stored_perm(request.code) else {
            return Ok(());
        };
        let account = match self.authenticate(request, peer)? {
            Sender::WhiteListed => return Ok(()),
            Sender::Account(_, account) => account,
        };
        let perm = if topic.starts_with(RETRY_PREFIX) {
            SUB
        } else {
            perm
        };
        match account.admin {
            true => Ok(()),
            false => grants_all(account, &[(topic.to_string(), perm)]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::AddressPattern;
    use crate::perm::{DENY, SUB};
    use crate::signature::sign_request;
    use ferrocket_protocol::codes::request_code;
    use std::collections::HashMap;

    fn config() -> AclConfig {
        let user = Account {
            secret_key: "userSecret".into(),
            white_address: AddressPattern::Never,
            admin: false,
            default_topic_perm: DENY,
            default_group_perm: SUB,
            perms: HashMap::from([
                ("Orders".to_string(), PUB | SUB),
                ("Audit".to_string(), SUB),
                ("%RETRY%blocked".to_string(), DENY),
            ]),
        };
        let admin = Account {
            secret_key: "adminSecret".into(),
            admin: true,
            ..user.clone()
        };
        AclConfig {
            global_white: vec![AddressPattern::parse("10.9.9.*").unwrap()],
            accounts: HashMap::from([("userKey1".into(), user), ("adminKey1".into(), admin)]),
        }
    }

    fn send(topic: &str) -> RemotingCommand {
        let mut request = RemotingCommand::request(request_code::SEND_MESSAGE_V2);
        request.ext_fields.insert("a", "PG");
        request.ext_fields.insert("b", topic);
        request
    }

    fn signed(mut request: RemotingCommand, key: &str, secret: &str) -> RemotingCommand {
        sign_request(&mut request, key, secret);
        request
    }

    fn check(request: &RemotingCommand) -> Result<(), String> {
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        config().check(request, peer).map_err(|d| d.0)
    }

    #[test]
    fn requests_are_checked_in_javas_order_with_javas_words() {
        assert_eq!(
            check(&signed(send("Orders"), "userKey1", "userSecret")),
            Ok(())
        );
        assert_eq!(
            check(&send("Orders")),
            Err("No accessKey is configured".into())
        );
        assert_eq!(
            check(&signed(send("Orders"), "nobody1", "x")),
            Err("No acl config for nobody1".into())
        );
        // Java says "No acl config for " to the empty key unsigned C++
        // clients send; the missing key is what is wrong.
        assert_eq!(
            check(&signed(send("Orders"), "", "x")),
            Err("No accessKey is configured".into())
        );
        assert_eq!(
            check(&signed(send("Orders"), "userKey1", "wrongSecret")),
            Err("Check signature failed for accessKey=userKey1".into())
        );
        let mut tampered = signed(send("Orders"), "userKey1", "userSecret");
        tampered.ext_fields.insert("b", "Audit");
        assert!(check(&tampered)
            .unwrap_err()
            .starts_with("Check signature failed"));
        assert_eq!(
            check(&signed(send("Audit"), "userKey1", "userSecret")),
            Err("No permission for topic:Audit".into())
        );
        assert_eq!(
            check(&signed(send("Other"), "userKey1", "userSecret")),
            Err("No default permission for topic:Other".into())
        );
        // A retry-topic send needs SUB on the group; the default grants it.
        assert_eq!(
            check(&signed(send("%RETRY%g1"), "userKey1", "userSecret")),
            Ok(())
        );
        assert_eq!(
            check(&signed(send("%RETRY%blocked"), "userKey1", "userSecret")),
            Err("No permission for group:blocked".into())
        );
        let create = RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC);
        assert_eq!(
            check(&signed(create.clone(), "userKey1", "userSecret")),
            Err("Need admin permission for request code=17, but accessKey=userKey1 is not".into())
        );
        assert_eq!(check(&signed(create, "adminKey1", "adminSecret")), Ok(()));
        // ACL 2.0's user requests answer passwords: admins only.
        let users = RemotingCommand::request(3005);
        assert!(check(&signed(users, "userKey1", "userSecret")).is_err());
        assert_eq!(
            check(&signed(send("Other"), "adminKey1", "adminSecret")),
            Ok(())
        );
        let trace = signed(send("RMQ_SYS_TRACE_TOPIC"), "userKey1", "userSecret");
        assert_eq!(check(&trace), Ok(()));
    }

    #[test]
    fn the_topic_checked_is_the_one_the_send_handler_reads() {
        // V2 with V1's long name only, and with both names: the handler
        // takes `topic`, so the check must too.
        let mut long_only = RemotingCommand::request(request_code::SEND_MESSAGE_V2);
        long_only.ext_fields.insert("a", "PG");
        long_only.ext_fields.insert("topic", "Other");
        let long_only = signed(long_only, "userKey1", "userSecret");
        assert_eq!(
            check(&long_only),
            Err("No default permission for topic:Other".into())
        );
        let mut both = send("Orders");
        both.ext_fields.insert("topic", "Audit");
        let both = signed(both, "userKey1", "userSecret");
        assert_eq!(check(&both), Err("No permission for topic:Audit".into()));
        let nameless = signed(
            RemotingCommand::request(request_code::SEND_MESSAGE),
            "userKey1",
            "userSecret",
        );
        assert!(check(&nameless)
            .unwrap_err()
            .starts_with("cannot read the send header"));
    }

    #[test]
    fn batch_acks_need_sub_on_each_group_and_topic() {
        let mut ack = RemotingCommand::request(request_code::BATCH_ACK_MESSAGE);
        ack.body = bytes::Bytes::from_static(
            br#"{"acks":[{"c":"g1","t":"Orders"},{"c":"blocked","t":"Orders"}]}"#,
        );
        let ack = signed(ack, "userKey1", "userSecret");
        assert_eq!(check(&ack), Err("No permission for group:blocked".into()));
        let mut bad = RemotingCommand::request(request_code::BATCH_ACK_MESSAGE);
        bad.body = bytes::Bytes::from_static(br#"{"acks":[{"t":"Orders"}]}"#);
        assert!(check(&signed(bad, "userKey1", "userSecret")).is_err());
    }

    #[test]
    fn name_server_writes_need_an_admin() {
        let config = config();
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let register = RemotingCommand::request(request_code::REGISTER_BROKER);
        let by = |key, secret| config.check_admin(&signed(register.clone(), key, secret), peer);
        assert_eq!(by("adminKey1", "adminSecret"), Ok(()));
        let refused = "Need admin permission for request code=103, but accessKey=userKey1 is not";
        assert_eq!(by("userKey1", "userSecret"), Err(Denied(refused.into())));
        assert!(by("adminKey1", "nope").is_err());
        let white: IpAddr = "10.9.9.1".parse().unwrap();
        assert_eq!(config.check_admin(&register, white), Ok(()));
    }

    #[test]
    fn white_listed_addresses_pass_unsigned() {
        let config = config();
        let white: IpAddr = "10.9.9.4".parse().unwrap();
        assert_eq!(config.check(&send("Other"), white), Ok(()));
        let mut pull = RemotingCommand::request(request_code::PULL_MESSAGE);
        pull.ext_fields.insert("topic", "Orders");
        pull.ext_fields.insert("consumerGroup", "blocked");
        let pull = signed(pull, "userKey1", "userSecret");
        assert_eq!(check(&pull), Err("No permission for group:blocked".into()));
    }
}
