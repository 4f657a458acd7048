//! The admin requests' rules for users and ACLs.

use super::*;

fn info(password: &str, user_type: &str) -> UserInfo {
    UserInfo {
        password: Some(password.into()),
        user_type: Some(user_type.into()),
        ..UserInfo::default()
    }
}

fn with_users() -> AuthMetadata {
    let mut meta = AuthMetadata::default();
    meta.create_user(None, "root", &info("rootpw", "Super"))
        .unwrap();
    meta.create_user(Some("root"), "alice", &info("alicepw", "Normal"))
        .unwrap();
    meta
}

fn entry(resource: &str, actions: &[&str], decision: &str) -> EntryInfo {
    EntryInfo {
        resource: Some(resource.into()),
        actions: actions.iter().map(|a| a.to_string()).collect(),
        source_ips: vec![],
        decision: Some(decision.into()),
    }
}

fn acl(subject: &str, policy_type: Option<&str>, entries: Vec<EntryInfo>) -> Acl {
    AclInfo {
        subject: Some(subject.into()),
        policies: vec![PolicyInfo {
            policy_type: policy_type.map(Into::into),
            entries,
        }],
    }
    .to_acl(None)
    .unwrap()
}

#[test]
fn users_follow_javas_rules() {
    let mut meta = with_users();
    let exists = meta
        .create_user(None, "alice", &info("x", "Normal"))
        .unwrap_err();
    assert_eq!(exists, AuthError::Denied("The user is existed".into()));
    let blank = meta
        .create_user(None, " ", &info("x", "Normal"))
        .unwrap_err();
    assert_eq!(blank, AuthError::Invalid("The username is blank".into()));
    let no_password = meta
        .create_user(None, "bob", &UserInfo::default())
        .unwrap_err();
    assert_eq!(
        no_password,
        AuthError::Denied("password can not be blank".into())
    );
    let by_normal = meta
        .create_user(Some("alice"), "eve", &info("x", "Super"))
        .unwrap_err();
    assert!(matches!(by_normal, AuthError::System(_)), "{by_normal:?}");
    let unknown_caller = meta
        .create_user(Some("ghost"), "eve", &info("x", "Super"))
        .unwrap_err();
    assert_eq!(
        unknown_caller,
        AuthError::Denied("User:ghost is not found.".into())
    );
    assert!(matches!(
        meta.create_user(None, "eve", &info("x", "Boss")),
        Err(AuthError::Denied(_))
    ));
    meta.create_user(Some("alice"), "bob", &info("bobpw", ""))
        .unwrap();
    assert_eq!(meta.user("bob").unwrap().user_type, UserType::Normal);
    assert_eq!(meta.user("bob").unwrap().user_status, UserStatus::Enable);

    let missing = meta
        .update_user(None, "nobody", &info("x", ""))
        .unwrap_err();
    assert_eq!(missing, AuthError::Denied("The user is not exist".into()));
    let root_by_normal = meta
        .update_user(Some("alice"), "root", &info("x", ""))
        .unwrap_err();
    assert!(matches!(root_by_normal, AuthError::Denied(_)));
    meta.update_user(Some("alice"), "bob", &info("newpw", ""))
        .unwrap();
    assert_eq!(meta.user("bob").unwrap().password, "newpw");
    assert_eq!(meta.user("bob").unwrap().user_type, UserType::Normal);

    assert!(meta.delete_user(Some("alice"), "root").is_err());
    assert_eq!(meta.delete_user(None, "nobody"), Ok(()));
    let names: Vec<_> = meta
        .list_users("o")
        .into_iter()
        .map(|u| u.username.unwrap())
        .collect();
    assert_eq!(names, ["bob", "root"]);
}

#[test]
fn acls_merge_by_resource_and_go_with_their_user() {
    let mut meta = with_users();
    let orphan = meta.upsert_acl(acl(
        "User:nobody",
        None,
        vec![entry("Topic:t", &["Pub"], "Allow")],
    ));
    assert_eq!(
        orphan,
        Err(AuthError::Denied(
            "The subject of User:nobody is not exist.".into()
        ))
    );
    meta.upsert_acl(acl(
        "User:alice",
        None,
        vec![
            entry("Topic:a", &["Pub"], "Allow"),
            entry("Topic:b", &["Sub"], "Allow"),
        ],
    ))
    .unwrap();
    meta.upsert_acl(acl(
        "User:alice",
        Some("Custom"),
        vec![
            entry("Topic:a", &["Sub"], "Deny"),
            entry("Group:g", &["Sub"], "Allow"),
        ],
    ))
    .unwrap();
    meta.upsert_acl(acl(
        "User:alice",
        Some("Default"),
        vec![entry("*", &["All"], "Deny")],
    ))
    .unwrap();
    let got = meta.get_acl("User:alice").unwrap().unwrap();
    let resources: Vec<_> = got.policies[0]
        .entries
        .iter()
        .map(|e| e.resource.clone().unwrap())
        .collect();
    assert_eq!(resources, ["Topic:a", "Topic:b", "Group:g"]);
    assert_eq!(got.policies[0].entries[0].actions, ["Sub"]);
    assert_eq!(got.policies[0].entries[0].decision.as_deref(), Some("Deny"));
    assert_eq!(got.policies[1].policy_type.as_deref(), Some("Default"));

    let listed = meta.list_acls("alice", "Topic:");
    assert_eq!(listed[0].policies.len(), 1);
    assert_eq!(listed[0].policies[0].entries.len(), 2);
    assert!(meta.list_acls("bob", "").is_empty());

    let topic_a = Resource::parse("Topic:a").unwrap();
    meta.delete_acl("User:alice", PolicyType::Custom, Some(&topic_a))
        .unwrap();
    assert_eq!(
        meta.get_acl("User:alice").unwrap().unwrap().policies[0]
            .entries
            .len(),
        2
    );
    assert_eq!(
        meta.get_acl("User:nobody"),
        Err(AuthError::Denied("The subject is not exist.".into()))
    );
    meta.delete_acl("User:alice", PolicyType::Custom, None)
        .unwrap();
    assert_eq!(meta.get_acl("User:alice"), Ok(None));
    assert_eq!(
        meta.delete_acl("User:alice", PolicyType::Custom, None),
        Err(AuthError::Denied("The acl is not exist.".into()))
    );
    meta.upsert_acl(acl(
        "User:alice",
        None,
        vec![entry("Topic:a", &["Pub"], "Allow")],
    ))
    .unwrap();
    meta.delete_user(None, "alice").unwrap();
    assert!(meta.acl("User:alice").is_none());
}

#[test]
fn the_file_round_trips_and_a_change_is_persisted_before_it_is_seen() {
    let mut meta = with_users();
    meta.upsert_acl(acl(
        "User:alice",
        None,
        vec![entry("Topic:a*", &["Pub", "Sub"], "Allow")],
    ))
    .unwrap();
    let text = serde_json::to_string(&meta.to_file()).unwrap();
    let file: AuthFile = serde_json::from_str(&text).unwrap();
    assert_eq!(AuthMetadata::from_file(&file).unwrap(), meta);

    let store = AuthStore::new(meta);
    let before = store.version();
    let failed = store.update(
        |m| m.delete_user(None, "alice"),
        |_| Err("disk full".into()),
    );
    assert!(matches!(failed, Err(AuthError::System(ref m)) if m.contains("disk full")));
    assert!(store.current().user("alice").is_some());
    assert_eq!(store.version(), before);
    let mut written = None;
    store
        .update(
            |m| m.delete_user(None, "alice"),
            |m| {
                written = Some(m.clone());
                Ok(())
            },
        )
        .unwrap();
    assert!(written.unwrap().user("alice").is_none());
    assert!(store.current().user("alice").is_none());
    assert_eq!(store.version(), before + 1);
}
