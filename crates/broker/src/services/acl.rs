//! A shard's copy of the ACL in force (`aclEnable=true`): taken again
//! only when a reload moved the store's version, so checking a request
//! takes no lock.

use std::cell::RefCell;
use std::sync::Arc;

use ferrocket_acl::{AclConfig, AclStore};

/// A shard's copy of the ACL and the version it was taken at.
#[derive(Default)]
pub(crate) struct AclCache {
    seen: RefCell<Option<(u64, Arc<AclConfig>)>>,
}

impl AclCache {
    pub fn current(&self, store: &AclStore) -> Arc<AclConfig> {
        let version = store.version();
        let mut seen = self.seen.borrow_mut();
        match &*seen {
            Some((at, config)) if *at == version => Arc::clone(config),
            _ => {
                let config = store.current();
                *seen = Some((version, Arc::clone(&config)));
                config
            }
        }
    }
}
