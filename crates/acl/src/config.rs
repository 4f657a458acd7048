//! `plain_acl.yml` and the files beside it, as RocketMQ finds and reads
//! them (`PlainPermissionManager`): `$ROCKETMQ_HOME/conf/plain_acl.yml` and
//! every `*.yml` / `*.yaml` under `$ROCKETMQ_HOME/conf/acl/`.
//!
//! ```yaml
//! globalWhiteRemoteAddresses: ["10.10.103.*"]
//! accounts:
//!   - accessKey: RocketMQ
//!     secretKey: "12345678"
//!     whiteRemoteAddress: ""
//!     admin: false
//!     defaultTopicPerm: DENY
//!     defaultGroupPerm: SUB
//!     topicPerms: ["topicA=DENY", "topicB=PUB|SUB"]
//!     groupPerms: ["groupA=DENY", "groupB=PUB|SUB"]
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

use crate::address::AddressPattern;
use crate::perm::{parse_perm, Perm};
use crate::AclError;

/// The main file, under the RocketMQ home.
pub const PLAIN_ACL_FILE: &str = "conf/plain_acl.yml";
/// More account files, under the RocketMQ home.
pub const ACL_DIR: &str = "conf/acl";
/// Java's prefix of a group's resource name.
pub(crate) const RETRY_PREFIX: &str = "%RETRY%";
/// Shortest access and secret key accepted ("longer than 6").
const KEY_LENGTH_MIN: usize = 7;
/// Most files under `conf/acl` read (a bound on a misconfigured tree).
const ACL_FILES_MAX: usize = 1_024;

/// One account.
#[derive(Debug, Clone)]
pub struct Account {
    pub secret_key: String,
    pub white_address: AddressPattern,
    pub admin: bool,
    pub default_topic_perm: Perm,
    pub default_group_perm: Perm,
    /// Topic names, and `%RETRY%{group}` for groups.
    pub perms: HashMap<String, Perm>,
}

/// Everything the ACL files say.
#[derive(Debug, Clone, Default)]
pub struct AclConfig {
    pub global_white: Vec<AddressPattern>,
    pub accounts: HashMap<String, Account>,
}

/// The files to read under `home`, the main file first (it must exist).
pub fn acl_files(home: &Path) -> Result<Vec<PathBuf>, AclError> {
    let main = home.join(PLAIN_ACL_FILE);
    if !main.is_file() {
        return Err(AclError::Invalid {
            path: main.display().to_string(),
            reason: "aclEnable=true needs this file (RocketMQ's plain_acl.yml)".into(),
        });
    }
    let mut files = vec![main];
    let mut pending = vec![home.join(ACL_DIR)];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        found.sort();
        for path in found {
            if path.is_dir() {
                pending.push(path);
            } else if is_yaml(&path) && files.len() < ACL_FILES_MAX {
                files.push(path);
            }
        }
    }
    Ok(files)
}

fn is_yaml(path: &Path) -> bool {
    let tools = path.file_name().is_some_and(|n| n == "tools.yml");
    let ext = path.extension().and_then(|e| e.to_str());
    !tools && matches!(ext, Some("yml") | Some("yaml"))
}

impl AclConfig {
    /// Reads `files` in order; an access key in two files keeps the first.
    pub fn load(files: &[PathBuf]) -> Result<AclConfig, AclError> {
        let mut config = AclConfig::default();
        for path in files {
            let name = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(|source| AclError::Read {
                path: name.clone(),
                source,
            })?;
            let invalid = |reason: String| AclError::Invalid {
                path: name.clone(),
                reason,
            };
            config.read(&text, &name).map_err(invalid)?;
        }
        Ok(config)
    }

    /// Adds one file's whitelist and accounts.
    fn read(&mut self, text: &str, name: &str) -> Result<(), String> {
        let docs = YamlLoader::load_from_str(text).map_err(|e| e.to_string())?;
        let Some(doc) = docs.first() else {
            return Ok(());
        };
        for pattern in strings(
            &doc["globalWhiteRemoteAddresses"],
            "globalWhiteRemoteAddresses",
        )? {
            self.global_white.push(AddressPattern::parse(&pattern)?);
        }
        let accounts = match &doc["accounts"] {
            Yaml::Array(accounts) => accounts.as_slice(),
            Yaml::BadValue | Yaml::Null => &[],
            _ => return Err("accounts must be a list".into()),
        };
        for entry in accounts {
            let (access_key, account) = account(entry)?;
            if self.accounts.contains_key(&access_key) {
                tracing::warn!(file = name, %access_key, "access key defined twice; the first is kept");
                continue;
            }
            self.accounts.insert(access_key, account);
        }
        Ok(())
    }
}

/// A list of strings, or nothing.
fn strings(value: &Yaml, key: &str) -> Result<Vec<String>, String> {
    match value {
        Yaml::BadValue | Yaml::Null => Ok(Vec::new()),
        Yaml::Array(items) => items
            .iter()
            .map(|item| scalar(item).ok_or_else(|| format!("{key} must list strings")))
            .collect(),
        _ => Err(format!("{key} must be a list")),
    }
}

/// A scalar as text (YAML reads `12345678` as a number).
fn scalar(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn account(entry: &Yaml) -> Result<(String, Account), String> {
    let access_key = scalar(&entry["accessKey"]).unwrap_or_default();
    let secret_key = scalar(&entry["secretKey"]).unwrap_or_default();
    if access_key.len() < KEY_LENGTH_MIN || secret_key.len() < KEY_LENGTH_MIN {
        // Java's words, without the secret itself.
        let secret_shown = if secret_key.is_empty() { "" } else { "***" };
        return Err(format!(
            "The accessKey={access_key} and secretKey={secret_shown} cannot be null and length \
             should longer than 6"
        ));
    }
    let white = scalar(&entry["whiteRemoteAddress"]).unwrap_or_default();
    let mut perms = HashMap::new();
    for (kind, key, prefix) in [
        ("group", "groupPerms", RETRY_PREFIX),
        ("topic", "topicPerms", ""),
    ] {
        for item in strings(&entry[key], key)? {
            let parts: Vec<&str> = item.split('=').filter(|p| !p.is_empty()).collect();
            let [name, perm] = parts.as_slice() else {
                return Err(format!(
                    "Parse resource permission failed for {kind}:{item}"
                ));
            };
            perms.insert(format!("{prefix}{}", name.trim()), parse_perm(Some(perm)));
        }
    }
    let account = Account {
        secret_key,
        white_address: AddressPattern::parse(&white)?,
        admin: entry["admin"].as_bool().unwrap_or(false),
        default_topic_perm: parse_perm(scalar(&entry["defaultTopicPerm"]).as_deref()),
        default_group_perm: parse_perm(scalar(&entry["defaultGroupPerm"]).as_deref()),
        perms,
    };
    Ok((access_key, account))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perm::{DENY, PUB, SUB};

    const SHIPPED: &str = r#"
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
"#;

    #[test]
    fn the_shipped_file_loads() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("conf/acl/more")).unwrap();
        std::fs::write(dir.path().join(PLAIN_ACL_FILE), SHIPPED).unwrap();
        let extra = "accounts:\n  - accessKey: extraAK1\n    secretKey: extraSK1\n";
        std::fs::write(dir.path().join("conf/acl/more/extra.yaml"), extra).unwrap();
        std::fs::write(dir.path().join("conf/acl/tools.yml"), "not: [acl").unwrap();
        let files = acl_files(dir.path()).unwrap();
        assert_eq!(files.len(), 2, "{files:?}");
        let config = AclConfig::load(&files).unwrap();
        assert_eq!(config.global_white.len(), 2);
        let rocketmq = &config.accounts["RocketMQ"];
        assert_eq!(rocketmq.secret_key, "12345678");
        assert!(!rocketmq.admin);
        assert_eq!(
            (rocketmq.default_topic_perm, rocketmq.default_group_perm),
            (DENY, SUB)
        );
        assert_eq!(rocketmq.perms["topicB"], PUB | SUB);
        assert_eq!(rocketmq.perms["%RETRY%groupA"], DENY);
        assert_eq!(rocketmq.white_address, AddressPattern::Never);
        assert!(config.accounts["rocketmq2"].admin);
        assert_eq!(config.accounts["extraAK1"].default_topic_perm, DENY);
    }

    #[test]
    fn bad_files_are_refused_with_javas_words() {
        let mut config = AclConfig::default();
        let short = "accounts:\n  - accessKey: ak\n    secretKey: 12345678\n";
        assert!(config
            .read(short, "f")
            .unwrap_err()
            .contains("length should longer than 6"));
        let perm = "accounts:\n  - accessKey: ak12345\n    secretKey: 12345678\n    topicPerms: [\"a=b=c\"]\n";
        assert_eq!(
            config.read(perm, "f").unwrap_err(),
            "Parse resource permission failed for topic:a=b=c"
        );
        assert!(config
            .read("globalWhiteRemoteAddresses: [\"300.1.1.*\"]", "f")
            .is_err());
        assert!(acl_files(Path::new("/nonexistent/rocketmq/home")).is_err());
    }
}
