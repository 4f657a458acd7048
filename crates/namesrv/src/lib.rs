//! Ferrocket's name server (RocketMQ NameServer): the broker registry, topic
//! routes, broker liveness and namespaced KV config.
//!
//! Runs on one glommio executor (one thread): the Remoting server from
//! `ferrocket-runtime` plus a periodic scan that drops silent brokers. All
//! state lives on that thread, so nothing is locked. Routes are not kept
//! across restarts (brokers register with every name server every 30 s);
//! the KV config is, in `kvConfigPath` when one is set.
//!
//! `processor` answers the request codes, `route` and `kv` hold the state,
//! `keys` declares the settings and `settings` serves them online, `acl`
//! checks writes under ACL 1.0, `notify` sends NOTIFY_MIN_BROKER_ID_CHANGE,
//! `metrics` the Prometheus families. Depends on `ferrocket-runtime`,
//! `-protocol`, `-acl`, `-tls` and `-metrics`.

mod acl;
mod config;
mod error;
pub mod keys;
pub mod kv;
pub mod kv_file;
mod metrics;
mod notify;
pub mod processor;
pub mod route;
mod server;
pub mod settings;
mod unsupported;

pub use config::{
    kv_config_path_under, NamesrvConfig, BROKER_EXPIRY_MS_DEFAULT, LISTEN_PORT_DEFAULT,
    SCAN_INTERVAL_MS_DEFAULT, STOP_POLL_INTERVAL_MS_DEFAULT,
};
pub use error::NamesrvError;
pub use keys::NAMESRV_SETTINGS;
pub use server::{run, start, NamesrvHandle, START_TIMEOUT_MS};
