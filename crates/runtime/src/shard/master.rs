//! The writer side of a single-writer control-plane table.
//!
//! One shard owns the [`Master`] of a table; every shard (the writer
//! included) reads a [`Replica`](super::Replica). A change runs under the
//! master's write lock: it is applied to the working copy, persisted, and
//! only then published as a new immutable [`Versioned`] snapshot, which the
//! caller sends to every shard. A change whose persistence fails is undone
//! by going back to the last published snapshot, so no shard ever sees a
//! change the disk does not have.

use std::cell::RefCell;
use std::sync::Arc;

use glommio::sync::Semaphore;

use super::replica::Versioned;

/// Why a change did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeError<E> {
    /// The writer is stopping (its lock is closed).
    Closed,
    /// The change was refused, or its persistence failed (and was undone).
    Failed(E),
}

/// The single writer's state of a table.
pub struct Master<T> {
    /// The working copy (equal to `published` between changes).
    table: RefCell<T>,
    /// The last snapshot given out.
    published: RefCell<Versioned<T>>,
    /// One change at a time: persistence and snapshots go out in order.
    write_lock: Semaphore,
}

impl<T: Clone> Master<T> {
    pub fn new(initial: Versioned<T>) -> Self {
        Self {
            table: RefCell::new(T::clone(&initial.value)),
            published: RefCell::new(initial),
            write_lock: Semaphore::new(1),
        }
    }

    /// Reads the working copy.
    pub fn read<R>(&self, read: impl FnOnce(&T) -> R) -> R {
        read(&self.table.borrow())
    }

    /// The last published snapshot.
    pub fn published(&self) -> Versioned<T> {
        self.published.borrow().clone()
    }

    /// Applies `apply` (which answers `(answer, changed)`); when it changed
    /// the table, persists the new snapshot with `persist` and publishes
    /// it. Answers the snapshot to send to every shard, `None` when nothing
    /// changed.
    pub async fn change<R, E>(
        &self,
        apply: impl FnOnce(&mut T) -> Result<(R, bool), E>,
        persist: impl AsyncFnOnce(Arc<T>) -> Result<(), E>,
    ) -> Result<(R, Option<Versioned<T>>), ChangeError<E>> {
        let _permit = self
            .write_lock
            .acquire_permit(1)
            .await
            .map_err(|_| ChangeError::Closed)?;
        let (answer, changed) = apply(&mut self.table.borrow_mut()).map_err(ChangeError::Failed)?;
        if !changed {
            return Ok((answer, None));
        }
        let snapshot = Arc::new(self.table.borrow().clone());
        if let Err(err) = persist(Arc::clone(&snapshot)).await {
            let last = T::clone(&self.published.borrow().value);
            *self.table.borrow_mut() = last;
            return Err(ChangeError::Failed(err));
        }
        let version = self.published.borrow().version + 1;
        let published = Versioned {
            version,
            value: snapshot,
        };
        *self.published.borrow_mut() = published.clone();
        assert_eq!(self.published.borrow().version, version);
        Ok((answer, Some(published)))
    }

    /// Refuses every later change (at shutdown).
    pub fn close(&self) {
        self.write_lock.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_publish_new_versions_and_failed_persists_are_undone() {
        glommio::LocalExecutor::default().run(async {
            let master = Master::new(Versioned {
                version: 1,
                value: Arc::new(vec![1]),
            });
            let keep = async |_: Arc<Vec<i32>>| Ok::<(), String>(());
            let (len, published) = master.change(|t| Ok((t.len(), false)), keep).await.unwrap();
            assert_eq!((len, published.is_none()), (1, true));
            let (_, published) = master
                .change(
                    |t| {
                        t.push(2);
                        Ok(((), true))
                    },
                    keep,
                )
                .await
                .unwrap();
            let published = published.unwrap();
            assert_eq!((published.version, &*published.value), (2, &vec![1, 2]));
            let lose = async |_: Arc<Vec<i32>>| Err::<(), String>("disk full".into());
            let failed = master
                .change(
                    |t| {
                        t.push(3);
                        Ok(((), true))
                    },
                    lose,
                )
                .await;
            assert_eq!(failed.unwrap_err(), ChangeError::Failed("disk full".into()));
            assert_eq!(master.read(|t| t.clone()), vec![1, 2]);
            assert_eq!(master.published().version, 2);
            master.close();
            let closed = master.change(|_| Ok(((), true)), keep).await;
            assert_eq!(closed.unwrap_err(), ChangeError::Closed);
        });
    }
}
