//! ACL 1.0 on a server's admin requests: the name server's writes and
//! every request to a controller (Java's servers check neither). The keys
//! that turn it on and say where the accounts are, declared once for both
//! (each nests [`ADMIN_ACL_SETTINGS`] over its [`AdminAclSettings`]), and
//! the opening of the accounts they name. The broker's `aclEnable` and
//! `rocketmqHome` mean more (every request, all of `conf/`): its own.

use std::path::PathBuf;
use std::sync::Arc;

use ferrocket_settings::{decl, parse_bool, parse_value, Decl};

use crate::AclStore;

/// `aclEnable`, `aclAdminSignatureWindowMs`, `rocketmqHome`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdminAclSettings {
    /// `aclEnable`: admin requests need a white-listed address or an admin
    /// account's signature.
    pub enable: bool,
    /// `aclAdminSignatureWindowMs` (Ferrocket's; 0 is off): admin requests
    /// must carry a fresh stamp of their code (`crate::stamp`).
    pub signature_window_ms: u64,
    /// `rocketmqHome`: where `conf/plain_acl.yml` is; unset:
    /// `$ROCKETMQ_HOME`.
    pub rocketmq_home: Option<PathBuf>,
}

impl AdminAclSettings {
    /// The RocketMQ home (`rocketmqHome`, else `$ROCKETMQ_HOME`), if any.
    pub fn rocketmq_home(&self) -> Option<PathBuf> {
        self.rocketmq_home.clone().or_else(|| {
            std::env::var_os("ROCKETMQ_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
    }

    /// The accounts of `{rocketmqHome}/conf/plain_acl.yml` when
    /// `aclEnable=true` (`checked`: which requests, for the log); the
    /// error says what is missing or wrong.
    pub fn open(&self, checked: &str) -> Result<Option<Arc<AclStore>>, String> {
        if !self.enable {
            return Ok(None);
        }
        let home = self.rocketmq_home().ok_or_else(|| {
            "aclEnable=true needs rocketmqHome (or $ROCKETMQ_HOME): the directory whose \
             conf/plain_acl.yml lists the accounts"
                .to_string()
        })?;
        let store = AclStore::open(&home).map_err(|e| format!("ACL: {e}"))?;
        tracing::info!(home = %home.display(), "ACL 1.0 enabled for {checked}");
        Ok(Some(Arc::new(store)))
    }
}

/// The admin ACL keys, as the name server and the controller take them.
pub static ADMIN_ACL_SETTINGS: [Decl<AdminAclSettings>; 3] = [
    decl!(
        "aclEnable",
        "`false`",
        start,
        "admin requests (the name server's writes, all of a controller's) need a white-listed \
         address or an ACL 1.0 admin account's signature",
        |c, k, s| c.enable = parse_bool(k, s)?,
        |c| c.enable.to_string(),
    ),
    decl!(
        "aclAdminSignatureWindowMs",
        "0",
        start,
        "ms a signed admin request stays valid (Ferrocket key; 0: no check)",
        |c, k, s| c.signature_window_ms = parse_value(k, s)?
    ),
    decl!(
        "rocketmqHome",
        "",
        start,
        "where conf/plain_acl.yml is; unset: $ROCKETMQ_HOME",
        |c, _, s| c.rocketmq_home = Some(s.value.trim())
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        |c| c
            .rocketmq_home()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    ),
];

#[cfg(test)]
mod tests {
    use ferrocket_settings::Setting;

    use super::*;

    fn apply(settings: &mut AdminAclSettings, key: &str, value: &str) -> Result<(), String> {
        let decl = ADMIN_ACL_SETTINGS.iter().find(|d| d.name == key).unwrap();
        let setting = Setting::from_flag(value.into(), "test".into());
        (decl.apply)(settings, key, &setting)
    }

    #[test]
    fn the_keys_set_the_part_and_unset_is_the_default() {
        let mut settings = AdminAclSettings::default();
        apply(&mut settings, "aclEnable", "true").unwrap();
        apply(&mut settings, "aclAdminSignatureWindowMs", "60000").unwrap();
        apply(&mut settings, "rocketmqHome", " /opt/rocketmq ").unwrap();
        assert!(settings.enable);
        assert_eq!(settings.signature_window_ms, 60000);
        assert_eq!(settings.rocketmq_home, Some(PathBuf::from("/opt/rocketmq")));
        assert!(apply(&mut settings, "aclEnable", "maybe").is_err());
        apply(&mut settings, "rocketmqHome", "").unwrap();
        assert_eq!(settings.rocketmq_home, None);
        assert!(AdminAclSettings::default().open("test").unwrap().is_none());
    }

    #[test]
    fn acl_on_without_accounts_is_refused() {
        let empty = tempfile::tempdir().unwrap();
        let settings = AdminAclSettings {
            enable: true,
            signature_window_ms: 0,
            rocketmq_home: Some(empty.path().to_path_buf()),
        };
        let refused = settings.open("test").err().expect("refused");
        assert!(refused.starts_with("ACL: "), "{refused}");
    }
}
