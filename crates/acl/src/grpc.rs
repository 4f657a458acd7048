//! ACL 1.0 for the RocketMQ 5 gRPC clients: they sign the `x-mq-date-time`
//! metadata value, and send `authorization: MQv2-HMAC-SHA1
//! Credential=<accessKey>, SignedHeaders=x-mq-date-time, Signature=<hex>`
//! (hex of HMAC-SHA1(secret, date-time); Java upper case, Python and Rust
//! lower case). The rest of the check is the Remoting one: white-listed
//! addresses, the account, its admin flag, then each topic and group.

use std::net::IpAddr;

use hmac::{KeyInit, Mac};

use crate::config::AclConfig;
use crate::perm::Perm;
use crate::validator::{grants_all, Denied};

/// The only algorithm the clients use.
const ALGORITHM: &str = "MQv2-HMAC-SHA1";

type HmacSha1 = hmac::Hmac<sha1::Sha1>;

/// What an `authorization` value says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcCredential {
    pub access_key: String,
    /// The signature's bytes.
    pub signature: Vec<u8>,
}

/// Parses an `authorization` value; the error says what is wrong.
pub fn parse_authorization(value: &str) -> Result<GrpcCredential, String> {
    let (algorithm, rest) = value
        .trim()
        .split_once(' ')
        .ok_or("the authorization header has no credentials")?;
    if algorithm != ALGORITHM {
        return Err(format!("unsupported authorization algorithm {algorithm}"));
    }
    let mut access_key = None;
    let mut signature = None;
    for part in rest.split(',') {
        let Some((key, value)) = part.trim().split_once('=') else {
            continue;
        };
        match key.trim() {
            // `Credential=ak` or `Credential=ak/...`: the first segment.
            "Credential" => access_key = value.trim().split('/').next().map(str::to_string),
            "Signature" => signature = Some(hex(value.trim())?),
            _ => {}
        }
    }
    // A client without credentials sends an empty (or no) Credential:
    // that is "no access key", decided by the caller.
    Ok(GrpcCredential {
        access_key: access_key.unwrap_or_default(),
        signature: signature.unwrap_or_default(),
    })
}

fn hex(text: &str) -> Result<Vec<u8>, String> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return Err("the signature is not hex".into());
    }
    bytes
        .chunks(2)
        .map(|pair| match (digit(pair[0]), digit(pair[1])) {
            (Some(high), Some(low)) => Ok(high << 4 | low),
            _ => Err("the signature is not hex".to_string()),
        })
        .collect()
}

impl AclConfig {
    /// Whether a gRPC call from `peer`, with its `authorization` and
    /// `x-mq-date-time` metadata, may touch `resources`.
    pub fn check_grpc(
        &self,
        authorization: Option<&str>,
        date_time: Option<&str>,
        peer: IpAddr,
        resources: &[(String, Perm)],
    ) -> Result<(), Denied> {
        if self.global_white.iter().any(|p| p.matches(peer)) {
            return Ok(());
        }
        let authorization =
            authorization.ok_or_else(|| Denied("No accessKey is configured".into()))?;
        let credential = parse_authorization(authorization).map_err(Denied)?;
        let access_key = &credential.access_key;
        if access_key.is_empty() {
            return Err(Denied("No accessKey is configured".into()));
        }
        let account = self
            .accounts
            .get(access_key)
            .ok_or_else(|| Denied(format!("No acl config for {access_key}")))?;
        if account.white_address.matches(peer) {
            return Ok(());
        }
        let signed = date_time.unwrap_or("");
        let mut mac =
            HmacSha1::new_from_slice(account.secret_key.as_bytes()).expect("any key length");
        mac.update(signed.as_bytes());
        if mac.verify_slice(&credential.signature).is_err() {
            return Err(Denied(format!(
                "Check signature failed for accessKey={access_key}"
            )));
        }
        if account.admin {
            return Ok(());
        }
        grants_all(account, resources)
    }
}

/// The `authorization` value a client sends for `date_time` (for tests and
/// Rust callers).
pub fn grpc_authorization(access_key: &str, secret_key: &str, date_time: &str) -> String {
    let mut mac = HmacSha1::new_from_slice(secret_key.as_bytes()).expect("any key length");
    mac.update(date_time.as_bytes());
    let signature: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        "{ALGORITHM} Credential={access_key}, SignedHeaders=x-mq-date-time, Signature={signature}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::AddressPattern;
    use crate::config::Account;
    use crate::perm::{DENY, PUB, SUB};
    use std::collections::HashMap;

    fn config() -> AclConfig {
        let account = Account {
            secret_key: "appSecret1".into(),
            white_address: AddressPattern::Never,
            admin: false,
            default_topic_perm: DENY,
            default_group_perm: SUB,
            perms: HashMap::from([("Orders".to_string(), PUB | SUB)]),
        };
        AclConfig {
            global_white: Vec::new(),
            accounts: HashMap::from([("appAccess1".into(), account)]),
        }
    }

    #[test]
    fn v5_signatures_are_checked_in_either_hex_case() {
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let when = "20261201T093000Z";
        let lower = grpc_authorization("appAccess1", "appSecret1", when);
        let upper = lower.replace(
            lower.rsplit_once('=').unwrap().1,
            &lower.rsplit_once('=').unwrap().1.to_uppercase(),
        );
        let send = [("Orders".to_string(), PUB)];
        let config = config();
        assert_eq!(
            config.check_grpc(Some(&lower), Some(when), peer, &send),
            Ok(())
        );
        assert_eq!(
            config.check_grpc(Some(&upper), Some(when), peer, &send),
            Ok(())
        );
        let other = [("Other".to_string(), PUB)];
        let refused = config.check_grpc(Some(&lower), Some(when), peer, &other);
        assert_eq!(
            refused,
            Err(Denied("No default permission for topic:Other".into()))
        );
        let late = config.check_grpc(Some(&lower), Some("20261201T093001Z"), peer, &send);
        assert_eq!(
            late,
            Err(Denied(
                "Check signature failed for accessKey=appAccess1".into()
            ))
        );
        let missing = config.check_grpc(None, Some(when), peer, &send);
        assert_eq!(missing, Err(Denied("No accessKey is configured".into())));
        assert!(parse_authorization("Basic abc").is_err());
        assert!(parse_authorization("MQv2-HMAC-SHA1 Credential=a, Signature=zz").is_err());
        let empty = "MQv2-HMAC-SHA1 Credential=, SignedHeaders=x-mq-date-time, Signature=";
        let none = config.check_grpc(Some(empty), Some(when), peer, &send);
        assert_eq!(none, Err(Denied("No accessKey is configured".into())));
    }
}
