//! The control plane's single-writer tables: topics, clients and
//! subscription groups. Shard 0 holds each table's [`Master`]; every shard
//! holds a [`Replica`]. [`Shard::change_table`] is the one way to change
//! any of them: on shard 0 it applies the change under the master's lock,
//! persists the table's file (when it has one), publishes the snapshot and
//! installs it on every shard before answering, so a client sees its own
//! change on whichever shard it talks to next.

use std::rc::Rc;
use std::sync::Arc;

use ferrocket_runtime::shard::{ChangeError, Master, Replica, ShardCall, Versioned};
use ferrocket_store::ConfigDir;

use super::Shard;
use crate::error::Reject;
use crate::services::clients::ClientTable;
use crate::services::control::ControlPlane;
use crate::services::groups::{GroupTable, GROUPS_FILE};
use crate::services::persist::write_config;
use crate::services::request_modes::{RequestModeTable, REQUEST_MODES_FILE};
use crate::services::topics::{TopicTable, TOPICS_FILE};

/// A table with one writer (shard 0) and a copy on every shard.
pub(crate) trait Replicated: Clone + Send + Sync + 'static {
    /// Makes a new snapshot durable before any shard sees it.
    async fn persist(dir: &ConfigDir, snapshot: Arc<Self>) -> Result<(), Reject>;
    fn master(control: &ControlPlane) -> &Master<Self>;
    fn replica(shard: &Shard) -> &Replica<Self>;
}

impl Replicated for TopicTable {
    async fn persist(dir: &ConfigDir, snapshot: Arc<Self>) -> Result<(), Reject> {
        write_config(dir, TOPICS_FILE, snapshot).await
    }
    fn master(control: &ControlPlane) -> &Master<Self> {
        &control.topics
    }
    fn replica(shard: &Shard) -> &Replica<Self> {
        shard.topics()
    }
}

impl Replicated for ClientTable {
    /// The registry lives in memory only, as Java's does.
    async fn persist(_: &ConfigDir, _: Arc<Self>) -> Result<(), Reject> {
        Ok(())
    }
    fn master(control: &ControlPlane) -> &Master<Self> {
        &control.clients
    }
    fn replica(shard: &Shard) -> &Replica<Self> {
        shard.clients()
    }
}

impl Replicated for RequestModeTable {
    async fn persist(dir: &ConfigDir, snapshot: Arc<Self>) -> Result<(), Reject> {
        write_config(dir, REQUEST_MODES_FILE, snapshot).await
    }
    fn master(control: &ControlPlane) -> &Master<Self> {
        &control.request_modes
    }
    fn replica(shard: &Shard) -> &Replica<Self> {
        shard.request_modes()
    }
}

impl Replicated for GroupTable {
    async fn persist(dir: &ConfigDir, snapshot: Arc<Self>) -> Result<(), Reject> {
        write_config(dir, GROUPS_FILE, snapshot).await
    }
    fn master(control: &ControlPlane) -> &Master<Self> {
        &control.groups
    }
    fn replica(shard: &Shard) -> &Replica<Self> {
        shard.groups()
    }
}

/// On every shard: a new snapshot of table `T`.
#[derive(Clone)]
struct Install<T>(Versioned<T>);

impl<T: Replicated> ShardCall<Shard> for Install<T> {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        T::replica(&shard).install(self.0);
    }
}

impl Shard {
    /// The control plane's writer state: on shard 0 only.
    pub fn control(&self) -> Result<&ControlPlane, Reject> {
        self.control_plane()
            .ok_or_else(|| Reject::system("not the control shard"))
    }

    /// On shard 0: applies `apply` to table `T` (it answers
    /// `(answer, changed)`); a change is persisted, then installed on every
    /// shard before this returns. A failed write undoes the change.
    pub async fn change_table<T: Replicated, R>(
        &self,
        apply: impl FnOnce(&mut T) -> Result<(R, bool), Reject>,
    ) -> Result<R, Reject> {
        let control = self.control()?;
        assert_eq!(self.index, 0, "only shard 0 writes the control plane");
        let dir = &self.env.config_dir;
        let persist = async |snapshot: Arc<T>| T::persist(dir, snapshot).await;
        let (answer, published) =
            T::master(control)
                .change(apply, persist)
                .await
                .map_err(|err| match err {
                    ChangeError::Closed => Reject::system("the broker is stopping"),
                    ChangeError::Failed(reject) => reject,
                })?;
        if let Some(snapshot) = published {
            for reply in self.call_all(Install(snapshot)).await {
                if let Err(reject) = reply {
                    tracing::warn!(table = std::any::type_name::<T>(), remark = %reject.remark,
                        "a shard missed a table update");
                }
            }
        }
        Ok(answer)
    }
}
