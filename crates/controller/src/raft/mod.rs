//! The controller's Raft plumbing on `openraft`: the type configuration,
//! durable storage of the log, vote and snapshots ([`store`]), and the
//! transport between controllers over Remoting ([`network`]).

pub mod log_file;
pub mod network;
pub mod store;

use std::io::Cursor;

use openraft::BasicNode;
use serde::{Deserialize, Serialize};

use crate::state::Event;

/// What one Raft log entry carries: the events one request produced, applied
/// together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Events(pub Vec<Event>);

openraft::declare_raft_types!(
    /// The controller's Raft types: node ids are positions in the peer list.
    pub TypeConfig:
        D = Events,
        R = (),
        NodeId = u64,
        Node = BasicNode,
        SnapshotData = Cursor<Vec<u8>>,
);

/// The controller's Raft handle.
pub type ControllerRaft = openraft::Raft<TypeConfig>;
