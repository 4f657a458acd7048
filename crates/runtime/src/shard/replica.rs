//! Read copies of single-writer control-plane state.
//!
//! One shard (the writer) owns a table, applies every change to it, and
//! sends each new version to every shard as an immutable `Arc<T>` snapshot
//! over the mesh. Each shard keeps its copy in a [`Replica`]: reads borrow
//! it on the local core, with no lock and no write to a shared cache line;
//! an older snapshot arriving late is ignored.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// An immutable snapshot of a table at a version. `Send`: it travels to
/// other shards.
#[derive(Debug)]
pub struct Versioned<T> {
    pub version: u64,
    pub value: Arc<T>,
}

impl<T> Clone for Versioned<T> {
    fn clone(&self) -> Self {
        Self {
            version: self.version,
            value: self.value.clone(),
        }
    }
}

/// One shard's read copy.
#[derive(Debug)]
pub struct Replica<T> {
    version: Cell<u64>,
    value: RefCell<Arc<T>>,
}

impl<T> Replica<T> {
    pub fn new(initial: Versioned<T>) -> Self {
        Self {
            version: Cell::new(initial.version),
            value: RefCell::new(initial.value),
        }
    }

    /// The current snapshot. Cloning the `Arc` writes its reference count,
    /// a cache line every shard shares: prefer [`Replica::with`] on hot paths.
    pub fn get(&self) -> Arc<T> {
        self.value.borrow().clone()
    }

    /// Runs `read` on the current snapshot without touching its reference
    /// count (only read-only sharing between cores).
    pub fn with<R>(&self, read: impl FnOnce(&T) -> R) -> R {
        read(&self.value.borrow())
    }

    pub fn version(&self) -> u64 {
        self.version.get()
    }

    /// Installs `snapshot` if it is newer than the copy held; returns
    /// whether it did.
    pub fn install(&self, snapshot: Versioned<T>) -> bool {
        if snapshot.version <= self.version.get() {
            return false;
        }
        self.version.set(snapshot.version);
        *self.value.borrow_mut() = snapshot.value;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_newer_versions_replace_the_copy() {
        let replica = Replica::new(Versioned {
            version: 1,
            value: Arc::new("a"),
        });
        assert!(replica.install(Versioned {
            version: 3,
            value: Arc::new("c")
        }));
        assert!(!replica.install(Versioned {
            version: 2,
            value: Arc::new("b")
        }));
        assert_eq!(*replica.get(), "c");
        assert_eq!(replica.with(|value| value.len()), 1);
        assert_eq!(replica.version(), 3);
    }
}
