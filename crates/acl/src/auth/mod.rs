//! ACL 2.0 (RocketMQ 5.3's `auth` module): users who sign their requests
//! (authentication, `authenticationEnabled`) and ACLs that say what each
//! user may do to which topics, groups and clusters (authorization,
//! `authorizationEnabled`). Users and ACLs are managed with the admin
//! requests 3001-3010 and kept by the broker in one JSON file.
//!
//! This crate decides; the broker persists and answers.

mod check;
mod convert;
mod grpc;
mod metadata;
mod migrate;
mod model;
mod remoting;
mod store;
#[cfg(test)]
mod tests;

pub use check::Need;
pub use metadata::{AuthMetadata, Caller, ACL_ENTRIES_MAX, NAME_BYTES_MAX, USERS_MAX};
pub use migrate::needs_from_v1;
pub use model::*;
pub use remoting::{auth_code, remoting_needs};
pub use store::{AuthFile, AuthStore, AUTH_FILE};

/// A refused change, and how the broker answers it (Java's mapping).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// NO_PERMISSION (16): Java's `AuthenticationException` and
    /// `AuthorizationException`, which carry its validation failures too.
    Denied(String),
    /// INVALID_PARAMETER (29): a blank user name.
    Invalid(String),
    /// SYSTEM_ERROR (1).
    System(String),
}

impl AuthError {
    pub fn message(&self) -> &str {
        match self {
            AuthError::Denied(m) | AuthError::Invalid(m) | AuthError::System(m) => m,
        }
    }
}
