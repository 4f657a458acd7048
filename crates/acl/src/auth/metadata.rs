//! The users and ACLs, and the admin requests' changes to them (Java's
//! `AuthenticationMetadataManagerImpl`, `AuthorizationMetadataManagerImpl`
//! and the checks `AdminBrokerProcessor` adds), with Java's rules:
//! creating an existing user fails, deleting a missing one succeeds and
//! takes the user's ACL with it, only a super user makes or changes a super
//! user, create and update of an ACL both merge entry by resource.

use std::collections::BTreeMap;

use super::model::*;
use super::AuthError;

/// Most users kept, and most entries in one ACL.
pub const USERS_MAX: usize = 100_000;
pub const ACL_ENTRIES_MAX: usize = 10_000;
/// Longest user name and password, in bytes.
pub const NAME_BYTES_MAX: usize = 1024;

/// Every user and ACL, keyed by user name and by subject (`User:name`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthMetadata {
    pub(crate) users: BTreeMap<String, User>,
    pub(crate) acls: BTreeMap<String, Acl>,
}

/// Who makes an admin request: the `AccessKey` it was signed with; none
/// when it was not signed (authentication off), which Java counts as super.
pub type Caller<'a> = Option<&'a str>;

impl AuthMetadata {
    pub fn user(&self, username: &str) -> Option<&User> {
        self.users.get(username)
    }

    pub fn acl(&self, subject: &str) -> Option<&Acl> {
        self.acls.get(subject)
    }

    pub fn users(&self) -> impl Iterator<Item = &User> {
        self.users.values()
    }

    pub fn acls(&self) -> impl Iterator<Item = &Acl> {
        self.acls.values()
    }

    /// Whether `caller` may act as a super user (unsigned: yes, as Java).
    pub fn caller_is_super(&self, caller: Caller) -> Result<bool, AuthError> {
        let Some(name) = caller.filter(|c| !c.is_empty()) else {
            return Ok(true);
        };
        let user = self
            .users
            .get(name)
            .ok_or_else(|| AuthError::Denied(format!("User:{name} is not found.")))?;
        Ok(user.user_type == UserType::Super)
    }

    /// AUTH_CREATE_USER: `username` is the header's, which wins over the
    /// body's.
    pub fn create_user(
        &mut self,
        caller: Caller,
        username: &str,
        info: &UserInfo,
    ) -> Result<(), AuthError> {
        let username = header_username(username)?;
        let user_type = info.user_type().map_err(AuthError::Denied)?;
        if user_type == Some(UserType::Super) && !self.caller_is_super(caller)? {
            return Err(AuthError::System(
                "The super user can only be create by super user".into(),
            ));
        }
        let password = info
            .password()
            .ok_or_else(|| AuthError::Denied("password can not be blank".into()))?;
        check_length("password", password)?;
        if self.users.contains_key(username) {
            return Err(AuthError::Denied("The user is existed".into()));
        }
        if self.users.len() >= USERS_MAX {
            return Err(AuthError::Denied(format!(
                "The broker keeps at most {USERS_MAX} users."
            )));
        }
        let user = User {
            username: username.to_string(),
            password: password.to_string(),
            user_type: user_type.unwrap_or(UserType::Normal),
            user_status: info
                .user_status()
                .map_err(AuthError::Denied)?
                .unwrap_or(UserStatus::Enable),
        };
        self.users.insert(user.username.clone(), user);
        Ok(())
    }

    /// AUTH_UPDATE_USER: the password, type and status the body gives
    /// replace the user's; what it leaves out stays.
    pub fn update_user(
        &mut self,
        caller: Caller,
        username: &str,
        info: &UserInfo,
    ) -> Result<(), AuthError> {
        let username = header_username(username)?;
        let user_type = info.user_type().map_err(AuthError::Denied)?;
        let user_status = info.user_status().map_err(AuthError::Denied)?;
        if user_type == Some(UserType::Super) && !self.caller_is_super(caller)? {
            return Err(AuthError::System(
                "The super user can only be update by super user".into(),
            ));
        }
        let target_is_super = self
            .users
            .get(username)
            .ok_or_else(|| AuthError::Denied("The user is not exist".into()))?
            .user_type
            == UserType::Super;
        if target_is_super && !self.caller_is_super(caller)? {
            return Err(AuthError::Denied(
                "The super user can only be update by super user".into(),
            ));
        }
        let Some(user) = self.users.get_mut(username) else {
            return Err(AuthError::Denied("The user is not exist".into()));
        };
        if let Some(password) = info.password() {
            check_length("password", password)?;
            user.password = password.to_string();
        }
        user.user_type = user_type.unwrap_or(user.user_type);
        user.user_status = user_status.unwrap_or(user.user_status);
        Ok(())
    }

    /// AUTH_DELETE_USER: the user and its ACL; a missing user is no error.
    pub fn delete_user(&mut self, caller: Caller, username: &str) -> Result<(), AuthError> {
        if username.trim().is_empty() {
            return Err(AuthError::Denied("username can not be blank".into()));
        }
        let Some(user) = self.users.get(username) else {
            return Ok(());
        };
        if user.user_type == UserType::Super && !self.caller_is_super(caller)? {
            return Err(AuthError::Denied(
                "The super user can only be update by super user".into(),
            ));
        }
        self.users.remove(username);
        self.acls.remove(&subject_of(username));
        Ok(())
    }

    /// AUTH_LIST_USER: users whose name contains `filter`.
    pub fn list_users(&self, filter: &str) -> Vec<UserInfo> {
        let filter = filter.trim();
        self.users
            .values()
            .filter(|u| u.username.contains(filter))
            .map(UserInfo::from)
            .collect()
    }

    /// AUTH_CREATE_ACL and AUTH_UPDATE_ACL: merged into the subject's ACL,
    /// entry by resource (an entry for a resource already there replaces
    /// its actions, addresses and decision; others are kept).
    pub fn upsert_acl(&mut self, acl: Acl) -> Result<(), AuthError> {
        let username = parse_subject(&acl.subject).map_err(AuthError::Denied)?;
        if !self.users.contains_key(&username) {
            return Err(AuthError::Denied(format!(
                "The subject of {} is not exist.",
                acl.subject
            )));
        }
        let mut merged = self.acls.get(&acl.subject).cloned().unwrap_or(Acl {
            subject: acl.subject.clone(),
            policies: Vec::new(),
        });
        for policy in acl.policies {
            merge_policy(&mut merged, policy);
        }
        let entries: usize = merged.policies.iter().map(|p| p.entries.len()).sum();
        if entries > ACL_ENTRIES_MAX {
            return Err(AuthError::Denied(format!(
                "An ACL holds at most {ACL_ENTRIES_MAX} entries; this one would hold {entries}."
            )));
        }
        self.acls.insert(merged.subject.clone(), merged);
        Ok(())
    }

    /// AUTH_DELETE_ACL: the entry for `resource` in the policy of
    /// `policy_type`, or with no resource the whole ACL.
    pub fn delete_acl(
        &mut self,
        subject: &str,
        policy_type: PolicyType,
        resource: Option<&Resource>,
    ) -> Result<(), AuthError> {
        let subject = self.existing_subject(subject)?;
        let Some(acl) = self.acls.get_mut(&subject) else {
            return Err(AuthError::Denied("The acl is not exist.".into()));
        };
        let Some(resource) = resource else {
            self.acls.remove(&subject);
            return Ok(());
        };
        for policy in acl
            .policies
            .iter_mut()
            .filter(|p| p.policy_type == policy_type)
        {
            policy.entries.retain(|e| &e.resource != resource);
        }
        acl.policies.retain(|p| !p.entries.is_empty());
        if acl.policies.is_empty() {
            self.acls.remove(&subject);
        }
        Ok(())
    }

    /// AUTH_GET_ACL: the subject's ACL, if it has one.
    pub fn get_acl(&self, subject: &str) -> Result<Option<AclInfo>, AuthError> {
        let subject = self.existing_subject(subject)?;
        Ok(self.acls.get(&subject).map(AclInfo::from))
    }

    /// AUTH_LIST_ACL: ACLs whose subject contains `subject_filter`; with a
    /// `resource_filter` the subject does not contain, only the entries
    /// whose resource contains it (and no ACL left empty).
    pub fn list_acls(&self, subject_filter: &str, resource_filter: &str) -> Vec<AclInfo> {
        let (subject_filter, resource_filter) = (subject_filter.trim(), resource_filter.trim());
        let mut listed = Vec::new();
        for acl in self
            .acls
            .values()
            .filter(|a| a.subject.contains(subject_filter))
        {
            let mut acl = acl.clone();
            if !resource_filter.is_empty() && !acl.subject.contains(resource_filter) {
                for policy in &mut acl.policies {
                    policy
                        .entries
                        .retain(|e| e.resource.to_string().contains(resource_filter));
                }
                acl.policies.retain(|p| !p.entries.is_empty());
            }
            if !acl.policies.is_empty() {
                listed.push(AclInfo::from(&acl));
            }
        }
        listed
    }

    /// The subject key of an existing user, from `User:<name>`.
    fn existing_subject(&self, subject: &str) -> Result<String, AuthError> {
        if subject.trim().is_empty() {
            return Err(AuthError::Denied("The subject is null.".into()));
        }
        let username = parse_subject(subject).map_err(AuthError::Denied)?;
        if !self.users.contains_key(&username) {
            return Err(AuthError::Denied("The subject is not exist.".into()));
        }
        Ok(subject_of(&username))
    }
}

/// A header's user name, not blank (Java: INVALID_PARAMETER), as given.
fn header_username(username: &str) -> Result<&str, AuthError> {
    if username.trim().is_empty() {
        return Err(AuthError::Invalid("The username is blank".into()));
    }
    check_length("username", username)?;
    Ok(username)
}

fn check_length(what: &str, text: &str) -> Result<(), AuthError> {
    if text.len() > NAME_BYTES_MAX {
        return Err(AuthError::Invalid(format!(
            "The {what} is longer than {NAME_BYTES_MAX} bytes"
        )));
    }
    Ok(())
}

fn merge_policy(acl: &mut Acl, policy: Policy) {
    let Some(mine) = acl
        .policies
        .iter_mut()
        .find(|p| p.policy_type == policy.policy_type)
    else {
        acl.policies.push(policy);
        return;
    };
    for entry in policy.entries {
        match mine
            .entries
            .iter_mut()
            .find(|e| e.resource == entry.resource)
        {
            Some(existing) => *existing = entry,
            None => mine.entries.push(entry),
        }
    }
}
