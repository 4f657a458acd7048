//! The users and ACLs in force, shared by every shard: a reader takes the
//! current [`AuthMetadata`] without a lock once it has it (compare the
//! version, fetch again only when it moved); a change is made under one
//! lock, persisted by the caller's function, and only then put in force,
//! so a change that could not be written is neither answered nor seen.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::metadata::AuthMetadata;
use super::model::{AclInfo, UserInfo};
use super::AuthError;

/// The file the broker keeps them in, under its config directory.
pub const AUTH_FILE: &str = "authMetadata.json";

/// The file's JSON: the admin requests' bodies, in lists.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct AuthFile {
    #[serde(default)]
    pub users: Vec<UserInfo>,
    #[serde(default)]
    pub acls: Vec<AclInfo>,
}

impl AuthMetadata {
    /// What [`AUTH_FILE`] holds for these users and ACLs.
    pub fn to_file(&self) -> AuthFile {
        AuthFile {
            users: self.users().map(UserInfo::from).collect(),
            acls: self.acls().map(AclInfo::from).collect(),
        }
    }

    /// The users and ACLs a file holds, each checked as a request's would be.
    pub fn from_file(file: &AuthFile) -> Result<AuthMetadata, String> {
        let mut meta = AuthMetadata::default();
        for info in &file.users {
            let name = info.username.clone().unwrap_or_default();
            meta.create_user(None, &name, info)
                .map_err(|e| format!("user {name:?}: {}", e.message()))?;
        }
        for info in &file.acls {
            let acl = info.to_acl(None)?;
            let subject = acl.subject.clone();
            meta.upsert_acl(acl)
                .map_err(|e| format!("acl of {subject}: {}", e.message()))?;
        }
        Ok(meta)
    }
}

/// The shared, versioned users and ACLs. Readers never wait on a change's
/// write: the pointer is swapped once the write is done.
pub struct AuthStore {
    /// Locked only to read or replace the pointer, never across a write.
    current: Mutex<Arc<AuthMetadata>>,
    /// Orders changes: held from the copy to the install.
    writer: Mutex<()>,
    version: AtomicU64,
}

impl AuthStore {
    pub fn new(metadata: AuthMetadata) -> AuthStore {
        AuthStore {
            current: Mutex::new(Arc::new(metadata)),
            writer: Mutex::new(()),
            version: AtomicU64::new(1),
        }
    }

    /// Bumped on every change.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    pub fn current(&self) -> Arc<AuthMetadata> {
        Arc::clone(&self.current.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Makes a change: `change` edits a copy, `persist` writes it, and only
    /// then is it in force. Changes are made one at a time. Blocking (the
    /// write): call it off the shards' executors.
    pub fn update<T>(
        &self,
        change: impl FnOnce(&mut AuthMetadata) -> Result<T, AuthError>,
        persist: impl FnOnce(&AuthMetadata) -> Result<(), String>,
    ) -> Result<T, AuthError> {
        let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.current();
        let mut next = AuthMetadata::clone(&current);
        let answer = change(&mut next)?;
        if next == *current {
            return Ok(answer);
        }
        persist(&next).map_err(|e| {
            AuthError::System(format!(
                "persisting the users and ACLs failed ({e}); the change was not made"
            ))
        })?;
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(answer)
    }
}
