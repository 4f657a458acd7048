//! Both of RocketMQ's access controls. Names: `auth` always means ACL 2.0
//! (as RocketMQ 5.3's module is called) and `acl` alone means ACL 1.0,
//! except this crate's name and, in the broker, `wire/acl.rs` (the gate in
//! front of every request) and `services/acl.rs` (a shard's copy of shared
//! state), which serve both.
//!
//! - **ACL 1.0** ("plain ACL", the crate root's modules): accounts in
//!   `plain_acl.yml`, each request signed by the client with HMAC-SHA1 over
//!   its header values and body, checked against the account's topic and
//!   group permissions; `grpc` is the same for the v5 clients' signature.
//!   Java's classes: `PlainPermissionManager` (the check),
//!   `PlainAccessResource` (what a request needs), `Permission`, `AclUtils` /
//!   `AclSigner` (the signature), `RemoteAddressStrategyFactory`
//!   (white-listed addresses).
//! - **ACL 2.0** ([`auth`], RocketMQ 5.3's `auth` module): users and ACLs
//!   kept in the store's `authMetadata.json`, authentication and
//!   authorization.
//! - [`stored`]: the one table of requests that reach a stored message by
//!   offset or id, which both apply.
//!
//! What a server does with a refusal (the answer's code and remark) is the
//! caller's; this crate only decides. It depends on `ferrocket-protocol`,
//! and on `ferrocket-settings` for the admin ACL's keys ([`admin`]).

mod address;
pub mod admin;
pub mod auth;
mod config;
mod grpc;
mod perm;
mod refusal;
pub mod refusal_log;
mod resources;
mod signature;
mod stamp;
mod store;
pub mod stored;
mod validator;

pub use address::AddressPattern;
pub use admin::{AdminAclSettings, ADMIN_ACL_SETTINGS};
pub use config::{acl_files, Account, AclConfig, ACL_DIR, PLAIN_ACL_FILE};
pub use grpc::{grpc_authorization, parse_authorization, GrpcCredential};
pub use perm::{parse_perm, Perm, ANY, PUB, SUB};
pub use refusal::{admin_refusal, refused, ACL_EXCEPTION};
pub use signature::{sign, sign_request, signed_content, ACCESS_KEY, SIGNATURE};
pub use stamp::{check_stamp, now_ms, sign_request_stamped, stamp, STAMP_FIELD};
pub use store::AclStore;
pub use validator::{Denied, RELOAD_INTERVAL_MS};

/// Why an ACL file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AclError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Invalid { path: String, reason: String },
}
