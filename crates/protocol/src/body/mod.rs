//! JSON bodies (RocketMQ `RemotingSerializable` subclasses). Field names are
//! the Java ones. Decoding is liberal: numbers may arrive as strings, enums
//! as names or ordinals, and missing fields take their defaults.

pub mod controller;
mod group;
mod heartbeat;
mod lenient;
mod properties_text;
mod register_compressed;
mod route;
mod topic;

pub use controller::{
    BrokerMemberGroup, BrokerReplicasInfo, ElectMasterResponseBody, EpochEntryCache, EpochItem,
    ReplicaIdentity, ReplicasInfo, SyncStateSet,
};
pub use group::{
    SubscriptionGroupConfig, CONSUME_TIMEOUT_MINUTES_DEFAULT, RETRY_MAX_TIMES_DEFAULT,
    RETRY_QUEUE_NUMS_DEFAULT,
};
pub use heartbeat::{
    CheckClientRequestBody, ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData,
    MessageModel, ProducerData, SubscriptionData,
};
pub use lenient::{de_bool, de_i32, de_i64, de_string};
pub use properties_text::{
    parse_properties, parse_update, properties_text, show_text, UpdateRefusal, BLACK_LIST_REMARK,
    UPDATE_LINES_MAX,
};
pub use register_compressed::{decode_compressed, encode_compressed, CompressedBodyError};
pub use route::{BrokerData, BrokerMemberGroupBody, ClusterInfo, QueueData, TopicRouteData};
pub use topic::{
    perm, ConsumerIdList, DataVersion, KvTable, RegisterBrokerBody, TopicConfig,
    TopicConfigSerializeWrapper, TopicList,
};

use crate::ProtocolError;

/// Decodes a JSON body into `T`, with a typed error naming what was wrong.
pub fn decode_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ProtocolError> {
    serde_json::from_slice(body).map_err(|e| ProtocolError::Body(e.to_string()))
}

/// Encodes a body as JSON.
pub fn encode_json<T: serde::Serialize>(value: &T) -> Vec<u8> {
    // Serialising our own plain data types into memory cannot fail.
    serde_json::to_vec(value).unwrap_or_default()
}
