//! ACL 2.0's settings (Java's `AuthConfig`, read from broker.conf).

/// `authenticationEnabled`, `authorizationEnabled` and their companions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthConfig {
    /// `authenticationEnabled`: every request must be signed by a user.
    pub authentication_enabled: bool,
    /// `authorizationEnabled`: every request is checked against the
    /// signing user's ACL.
    pub authorization_enabled: bool,
    /// `authenticationWhitelist`: request codes (decimal; gRPC method
    /// request names for the gRPC endpoint) that need no signature.
    pub authentication_whitelist: Whitelist,
    /// `authorizationWhitelist`: codes that need no ACL.
    pub authorization_whitelist: Whitelist,
    /// `initAuthenticationUser` (`{"username": .., "password": ..}`): a
    /// super user made at start when there is none of that name.
    pub init_user: Option<(String, String)>,
    /// `migrateAuthFromV1Enabled`: make users and ACLs of the accounts in
    /// `{rocketmqHome}/conf/plain_acl.yml` (and `conf/acl/*.yml`) at start.
    pub migrate_from_v1: bool,
}

impl AuthConfig {
    /// Whether a request must pass either check.
    pub fn enabled(&self) -> bool {
        self.authentication_enabled || self.authorization_enabled
    }
}

/// A comma-separated list of request codes and gRPC request names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Whitelist {
    pub codes: Vec<i32>,
    pub names: Vec<String>,
}

impl Whitelist {
    pub fn parse(text: &str) -> Whitelist {
        let mut list = Whitelist::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item.parse::<i32>() {
                Ok(code) => list.codes.push(code),
                Err(_) => list.names.push(item.to_string()),
            }
        }
        list
    }

    pub fn has_code(&self, code: i32) -> bool {
        self.codes.contains(&code)
    }

    pub fn has_name(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }
}
