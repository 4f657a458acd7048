//! ACL 2.0's users and ACLs (Java's `User`, `Acl`, `Policy`, `PolicyEntry`,
//! `Resource`), and their JSON as the admin requests carry it (`UserInfo`,
//! `AclInfo`: camelCase, enum names as Java prints them, absent fields left
//! out). The same JSON is what the broker keeps on disk.
//!
//! Names are read in any case, as Java's `getByName` reads them; a name
//! that is none of the known ones is refused with the list of those that
//! are (Java drops an unknown action silently and reads an unknown user
//! type as Normal: a typo there would grant or keep what the operator did
//! not mean).

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// Names an enum is written and read by.
macro_rules! named {
    ($(#[$doc:meta])* $name:ident, $what:literal, { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// Reads a name in any case; the error lists the names known.
            pub fn parse(text: &str) -> Result<$name, String> {
                let text = text.trim();
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name().eq_ignore_ascii_case(text))
                    .ok_or_else(|| {
                        let known: Vec<&str> = Self::ALL.iter().map(|v| v.name()).collect();
                        format!("The {} {text:?} is unknown (known: {}).", $what, known.join(", "))
                    })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named!(
    /// Super users skip authorization.
    UserType, "user type", { Super => "Super", Normal => "Normal" }
);
named!(
    /// A disabled user cannot authenticate.
    UserStatus, "user status", { Enable => "enable", Disable => "disable" }
);
named!(
    /// Default entries are looked at only when no Custom entry matches.
    PolicyType, "policy type", { Custom => "Custom", Default => "Default" }
);
named!(Decision, "decision", { Allow => "Allow", Deny => "Deny" });
named!(
    /// What a request does to a resource. `All` in an entry grants every
    /// action; `Any` is only asked (a request any entry action serves).
    Action, "action", {
        All => "All", Any => "Any", Pub => "Pub", Sub => "Sub", Create => "Create",
        Update => "Update", Delete => "Delete", Get => "Get", List => "List",
    }
);
named!(
    ResourceType, "resource type", {
        Any => "Any", Cluster => "Cluster", Namespace => "Namespace", Topic => "Topic",
        Group => "Group",
    }
);

/// A user (Java's `User`; the password is the secret requests are signed
/// with).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub username: String,
    pub password: String,
    pub user_type: UserType,
    pub user_status: UserStatus,
}

/// How an entry's resource name matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// `Topic:*`: every name.
    Any,
    /// `Topic:abc`: that name.
    Literal,
    /// `Topic:abc*`: names starting with `abc`.
    Prefixed,
}

/// `Type:name`, `Type:prefix*`, `Type:*`, or `*` for everything.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Resource {
    pub kind: ResourceType,
    pub name: String,
    pub pattern: Pattern,
}

impl Resource {
    /// Every resource of every type (`*`).
    pub fn everything() -> Resource {
        Resource {
            kind: ResourceType::Any,
            name: String::new(),
            pattern: Pattern::Any,
        }
    }

    /// The one resource of `kind` named `name`, as a request names it.
    pub fn literal(kind: ResourceType, name: &str) -> Resource {
        Resource {
            kind,
            name: name.to_string(),
            pattern: Pattern::Literal,
        }
    }

    /// Reads `*`, `Type:*`, `Type:prefix*` or `Type:name` (type in any
    /// case); the error says what is wrong.
    pub fn parse(text: &str) -> Result<Resource, String> {
        let text = text.trim();
        if text == "*" {
            return Ok(Resource::everything());
        }
        let Some((kind, name)) = text.split_once(':') else {
            return Err(format!(
                "The resource {text:?} is not Type:name (Topic:t, Group:g, Cluster:c, Topic:prefix*, Topic:* or *)."
            ));
        };
        let kind = ResourceType::parse(kind)?;
        let name = name.trim();
        let (name, pattern) = match name.strip_suffix('*') {
            Some("") => ("", Pattern::Any),
            Some(prefix) => (prefix, Pattern::Prefixed),
            None => (name, Pattern::Literal),
        };
        if name.is_empty() && pattern != Pattern::Any {
            return Err(format!("The resource {text:?} has no name."));
        }
        Ok(Resource {
            kind,
            name: name.to_string(),
            pattern,
        })
    }

    /// Whether this (an entry's) resource covers `asked`, a literal one.
    pub fn covers(&self, asked: &Resource) -> bool {
        if self.kind == ResourceType::Any {
            return true;
        }
        if self.kind != asked.kind {
            return false;
        }
        match self.pattern {
            Pattern::Any => true,
            Pattern::Literal => self.name == asked.name,
            Pattern::Prefixed => asked.name.starts_with(&self.name),
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind, self.pattern) {
            (ResourceType::Any, _) => f.write_str("*"),
            (kind, Pattern::Any) => write!(f, "{kind}:*"),
            (kind, Pattern::Prefixed) => write!(f, "{kind}:{}*", self.name),
            (kind, Pattern::Literal) => write!(f, "{kind}:{}", self.name),
        }
    }
}

/// An address an entry is limited to: one IP, or a CIDR block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceIp {
    pub text: String,
    network: IpAddr,
    prefix_bits: u8,
}

impl SourceIp {
    /// Reads `10.1.2.3`, `10.0.0.0/8`, `::1` or `fd00::/8` (Java's
    /// `IPAddressUtils.isValidIPOrCidr`); v1's `10.1.*` forms are refused.
    pub fn parse(text: &str) -> Result<SourceIp, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("The source ip is empty.".into());
        }
        let invalid = || format!("The source ip {text:?} is invalid (an IP or a CIDR block).");
        let (ip, bits) = match text.split_once('/') {
            Some((ip, bits)) => (ip, Some(bits)),
            None => (text, None),
        };
        let network: IpAddr = ip.parse().map_err(|_| invalid())?;
        let bits_max = if network.is_ipv4() { 32 } else { 128 };
        let prefix_bits = match bits {
            None => bits_max,
            Some(bits) => bits
                .parse::<u8>()
                .ok()
                .filter(|b| *b <= bits_max)
                .ok_or_else(invalid)?,
        };
        Ok(SourceIp {
            text: text.to_string(),
            network,
            prefix_bits,
        })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match (self.network, ip) {
            (IpAddr::V4(_), IpAddr::V6(v6)) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            _ => ip,
        };
        let (net, addr, width) = match (self.network, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => (u32::from(n) as u128, u32::from(a) as u128, 32),
            (IpAddr::V6(n), IpAddr::V6(a)) => (u128::from(n), u128::from(a), 128),
            _ => return false,
        };
        let bits = u32::from(self.prefix_bits);
        if bits == 0 {
            return true;
        }
        let shift = width - bits;
        (net >> shift) == (addr >> shift)
    }
}

/// One rule of a policy (Java's `PolicyEntry`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub resource: Resource,
    pub actions: Vec<Action>,
    pub source_ips: Vec<SourceIp>,
    pub decision: Decision,
}

/// A subject's Custom or Default rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub policy_type: PolicyType,
    pub entries: Vec<Entry>,
}

/// A subject's policies (Java's `Acl`); the subject is `User:<name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acl {
    pub subject: String,
    pub policies: Vec<Policy>,
}

/// The subject key of a user (`User:alice`).
pub fn subject_of(username: &str) -> String {
    format!("{SUBJECT_PREFIX}{username}")
}

pub const SUBJECT_PREFIX: &str = "User:";

/// The user a subject key names (`User:alice` → `alice`, the type in any
/// case).
pub fn parse_subject(text: &str) -> Result<String, String> {
    let text = text.trim();
    match text.split_once(':') {
        Some((kind, name)) if kind.eq_ignore_ascii_case("User") && !name.trim().is_empty() => {
            Ok(name.trim().to_string())
        }
        _ => Err(format!("The subject {text:?} is not User:<name>.")),
    }
}

/// `UserInfo`: what the user requests carry and answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_status: Option<String>,
}

/// `AclInfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AclInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default)]
    pub policies: Vec<PolicyInfo>,
}

/// `PolicyInfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_type: Option<String>,
    #[serde(default)]
    pub entries: Vec<EntryInfo>,
}

/// `PolicyEntryInfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    #[serde(default)]
    pub actions: Vec<String>,
    #[serde(default)]
    pub source_ips: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
}
