//! What shards ask each other over the mesh. Requests about a queue go to
//! its owner shard; changes to the topic table and the client registry go
//! to shard 0 (their single writer), which sends new snapshots to all.

use ferrocket_protocol::body::{HeartbeatData, TopicConfig};
use ferrocket_runtime::shard::Versioned;

use crate::clients::ClientTable;
use crate::offset_table::OffsetMap;
use crate::pull::{PullAnswer, PullQuery};
use crate::system::{SystemRequest, SystemResponse};
use crate::topics::{TopicChange, TopicTable};
use crate::util::Reject;

/// A cross-shard request.
pub(crate) enum ShardRequest {
    // Queue owner.
    Pull(PullQuery),
    QueryOffset {
        group: String,
        topic: String,
        queue_id: i32,
        set_zero_if_not_found: bool,
    },
    CommitOffset {
        group: String,
        topic: String,
        queue_id: i32,
        offset: i64,
    },
    QueueBounds {
        topic: String,
        queue_id: i32,
    },
    // Shard 0, the control-plane writer.
    Topic(TopicChange),
    Heartbeat {
        conn_id: u64,
        data: HeartbeatData,
    },
    Unregister {
        client_id: String,
        producer_group: Option<String>,
        consumer_group: Option<String>,
    },
    ConnectionClosed {
        conn_id: u64,
    },
    ShardStopped {
        shard: usize,
        offsets: OffsetMap,
    },
    // Every shard, from shard 0.
    InstallTopics(Versioned<TopicTable>),
    InstallClients(Versioned<ClientTable>),
    SnapshotOffsets,
    ForgetTopic {
        topic: String,
    },
    Stats,
    /// Tell these connections of this shard that `group` changed.
    NotifyConsumerIdsChanged {
        group: String,
        conn_ids: Vec<u64>,
    },
    /// Timer, index, transactions and queue-time lookups (`system`).
    System(SystemRequest),
    /// Groups, locks, consume stats and delay levels (`consume`).
    Consume(crate::consume::MeshRequest),
}

/// Per-shard counters for GET_BROKER_RUNTIME_INFO.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ShardStats {
    pub put_messages: u64,
    pub put_bytes: u64,
    pub got_messages: u64,
    pub held_pulls: u64,
    /// Stored messages the broker could not copy to their REAL_TOPIC /
    /// REAL_QID (or whose timer was invalid), skipped.
    pub skipped_redeliveries: u64,
}

/// A cross-shard answer.
pub(crate) enum ShardResponse {
    Pull(PullAnswer),
    Offset(Result<i64, Reject>),
    Bounds { min: i64, max: i64 },
    Topic(Result<Option<TopicConfig>, Reject>),
    Done,
    Offsets { map: OffsetMap, changed: bool },
    Stats(ShardStats),
    System(SystemResponse),
    Consume(crate::consume::MeshResponse),
    Failed(Reject),
}

impl ShardResponse {
    /// The rejection to give when an answer has an unexpected shape.
    pub fn unexpected(&self) -> Reject {
        match self {
            ShardResponse::Failed(reject) => reject.clone(),
            _ => Reject::system("unexpected cross-shard answer"),
        }
    }
}
