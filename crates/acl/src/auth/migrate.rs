//! `migrateAuthFromV1Enabled`: ACL 1.0's accounts become users and ACLs
//! (Java's `AuthMigrator`). An account whose user exists is left alone; a
//! new one becomes a user (Super for an admin account) with its secret key
//! as password, its topic and group permissions Custom entries, and its
//! default permissions Default entries on `Topic:*` and `Group:*`. PUB is
//! [Pub], SUB [Sub], both [Pub, Sub], DENY [All] denied. White-listed
//! addresses are not carried over (as in Java).

use super::check::Need;
use super::metadata::AuthMetadata;
use super::model::*;
use super::AuthError;
use crate::config::{Account, AclConfig, RETRY_PREFIX};
use crate::perm::{Perm, DENY, PUB, SUB};

impl AuthMetadata {
    /// Adds the accounts of `config` that are not users yet; the answer is
    /// the names of those added.
    pub fn migrate_from_v1(&mut self, config: &AclConfig) -> Result<Vec<String>, AuthError> {
        let mut names: Vec<&String> = config.accounts.keys().collect();
        names.sort();
        let mut added = Vec::new();
        for name in names {
            if self.user(name).is_some() {
                continue;
            }
            let account = &config.accounts[name];
            let user_type = if account.admin { "Super" } else { "Normal" };
            let info = UserInfo {
                password: Some(account.secret_key.clone()),
                user_type: Some(user_type.into()),
                ..UserInfo::default()
            };
            self.create_user(None, name, &info)?;
            if let Some(acl) = acl_of(name, account) {
                self.upsert_acl(acl)?;
            }
            added.push(name.clone());
        }
        Ok(added)
    }
}

fn acl_of(name: &str, account: &Account) -> Option<Acl> {
    let mut custom: Vec<Entry> = Vec::new();
    let mut names: Vec<(&String, &Perm)> = account.perms.iter().collect();
    names.sort();
    for (resource, perm) in names {
        let resource = match resource.strip_prefix(RETRY_PREFIX) {
            Some(group) => Resource::literal(ResourceType::Group, group),
            None => Resource::literal(ResourceType::Topic, resource),
        };
        custom.push(entry(resource, *perm));
    }
    let any = |kind| Resource {
        kind,
        name: String::new(),
        pattern: Pattern::Any,
    };
    let defaults = vec![
        entry(any(ResourceType::Topic), account.default_topic_perm),
        entry(any(ResourceType::Group), account.default_group_perm),
    ];
    let policies: Vec<Policy> = [
        (PolicyType::Custom, custom),
        (PolicyType::Default, defaults),
    ]
    .into_iter()
    .filter(|(_, entries)| !entries.is_empty())
    .map(|(policy_type, entries)| Policy {
        policy_type,
        entries,
    })
    .collect();
    Some(Acl {
        subject: subject_of(name),
        policies,
    })
    .filter(|acl| !acl.policies.is_empty())
}

fn entry(resource: Resource, perm: Perm) -> Entry {
    let (actions, decision) = if perm & DENY != 0 || perm & (PUB | SUB) == 0 {
        (vec![Action::All], Decision::Deny)
    } else {
        let mut actions = Vec::new();
        if perm & PUB != 0 {
            actions.push(Action::Pub);
        }
        if perm & SUB != 0 {
            actions.push(Action::Sub);
        }
        (actions, Decision::Allow)
    };
    Entry {
        resource,
        actions,
        source_ips: Vec::new(),
        decision,
    }
}

/// What ACL 1.0's `(name, perm)` needs are in ACL 2.0's terms: PUB is Pub,
/// SUB Sub, ANY (route queries) either; a `%RETRY%g` name is the group `g`.
pub fn needs_from_v1(v1: &[(String, Perm)]) -> Vec<Need> {
    v1.iter()
        .map(|(name, perm)| {
            let mut actions = Vec::new();
            if perm & (PUB | crate::perm::ANY) != 0 {
                actions.push(Action::Pub);
            }
            if perm & (SUB | crate::perm::ANY) != 0 {
                actions.push(Action::Sub);
            }
            match name.strip_prefix(RETRY_PREFIX) {
                Some(group) => Need::new(ResourceType::Group, group, &actions),
                None => Need::new(ResourceType::Topic, name, &actions),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN_ACL: &str = "\
accounts:
  - accessKey: appAccess1
    secretKey: appSecret1
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=PUB|SUB
      - topicB=SUB
    groupPerms:
      - groupA=DENY
  - accessKey: adminAccess1
    secretKey: adminSecret1
    admin: true
";

    #[test]
    fn accounts_become_users_and_acls_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("conf")).unwrap();
        std::fs::write(dir.path().join("conf/plain_acl.yml"), PLAIN_ACL).unwrap();
        let config = AclConfig::load(&crate::acl_files(dir.path()).unwrap()).unwrap();
        let mut meta = AuthMetadata::default();
        assert_eq!(
            meta.migrate_from_v1(&config).unwrap(),
            ["adminAccess1", "appAccess1"]
        );
        assert_eq!(
            meta.user("adminAccess1").unwrap().user_type,
            UserType::Super
        );
        let app = meta.user("appAccess1").unwrap();
        assert_eq!(
            (app.password.as_str(), app.user_type),
            ("appSecret1", UserType::Normal)
        );
        let peer = "127.0.0.1".parse().unwrap();
        let may = |kind, name: &str, action| {
            meta.authorize(
                Some("appAccess1"),
                &[Need::new(kind, name, &[action])],
                peer,
            )
            .is_ok()
        };
        assert!(may(ResourceType::Topic, "topicA", Action::Pub));
        assert!(!may(ResourceType::Topic, "topicB", Action::Pub));
        assert!(may(ResourceType::Topic, "topicB", Action::Sub));
        assert!(!may(ResourceType::Topic, "other", Action::Sub));
        assert!(!may(ResourceType::Group, "groupA", Action::Sub));
        assert!(may(ResourceType::Group, "groupB", Action::Sub));
        assert!(meta.migrate_from_v1(&config).unwrap().is_empty());
    }
}
