//! Ferrocket's Rust Remoting client, used by the bench harness, the admin
//! CLI and the tests; it speaks to Ferrocket and to Apache RocketMQ alike.
//!
//! Owns: pipelined connections ([`Connection`], [`ConnectionPool`]), name
//! server calls and the route cache ([`NameServerClient`]), admin calls
//! ([`Admin`]), the producer ([`Producer`]: sync, oneway and batch sends)
//! and the pull consumer ([`PullConsumer`]: pulls, offsets, heartbeats).
//! Message queries by id, key, unique key and queue offset are `Admin`
//! methods (`query`); so are consumer-group administration, consume stats,
//! order locks and send-back (`consume_admin`). SQL92 pulls are
//! [`PullConsumer::pull_with_expression`] (`expression_pull`).
//!
//! Runs on whatever tokio runtime the caller drives, multi- or
//! current-thread: each connection spawns one reader and one writer task on
//! it. Nothing here blocks a thread.

pub mod admin;
mod auth_admin;
pub mod broker_stats;
pub mod connection;
pub mod consume_admin;
pub mod consumer;
pub mod error;
pub mod expression_pull;
mod json;
pub mod message;
pub mod namesrv;
mod object_keys;
pub mod pool;
pub mod producer;
pub mod producer_admin;
pub mod query;
mod recall;
pub mod reset_offset;
pub mod route;
pub mod send;
pub mod topic_stats;

pub use admin::{Admin, BrokerEntry, CreateTopicOptions};
pub use connection::{Connection, ConnectionConfig, Credentials, RequestHandler};
pub use consume_admin::{ConsumeStats, ConsumerConnection, QueueOffsets, SubscriptionGroup};
pub use consumer::{PullConsumer, PullConsumerConfig, PullResult, PullStatus};
pub use error::{expect_success, ClientError};
pub use json::decode_body;
pub use message::MessageExt;
pub use namesrv::NameServerClient;
pub use pool::ConnectionPool;
pub use producer::{Producer, ProducerConfig};
pub use producer_admin::ProducerConnection;
pub use query::{IdForm, KeyQuery};
pub use route::MessageQueue;
pub use send::{BatchMessage, QueueSelector, SendOptions, SendResult, SendStatus, SendVersion};
