//! A shard's copy of something every shard shares and a reload or a change
//! replaces (the ACL 1.0 accounts, ACL 2.0's users and ACLs): taken again
//! only when the shared version moved, so checking a request takes no lock.

use std::cell::RefCell;
use std::sync::Arc;

/// A shard's copy of a shared `T` and the version it was taken at.
pub(crate) struct VersionedCopy<T> {
    seen: RefCell<Option<(u64, Arc<T>)>>,
}

impl<T> Default for VersionedCopy<T> {
    fn default() -> Self {
        Self {
            seen: RefCell::new(None),
        }
    }
}

impl<T> VersionedCopy<T> {
    /// The copy of `version`, fetched with `fetch` when it is not the one
    /// held.
    pub fn current(&self, version: u64, fetch: impl FnOnce() -> Arc<T>) -> Arc<T> {
        let mut seen = self.seen.borrow_mut();
        match &*seen {
            Some((at, copy)) if *at == version => Arc::clone(copy),
            _ => {
                let copy = fetch();
                *seen = Some((version, Arc::clone(&copy)));
                copy
            }
        }
    }
}
