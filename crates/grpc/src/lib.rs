//! Ferrocket's RocketMQ 5 gRPC endpoint: `apache.rocketmq.v2.MessagingService`
//! (what the official v5 clients speak) served over any Remoting cluster
//! through its name server, as RocketMQ's proxy does in cluster mode.
//!
//! The proxy is stateless but for the clients' settings (from their
//! Telemetry streams): every call becomes Remoting requests to the brokers
//! the name server lists: routes from GET_ROUTEINFO_BY_TOPIC, sends as
//! SEND_MESSAGE, receives as POP_MESSAGE, acks as ACK_MESSAGE, and so on.
//!
//! Layout: `service` implements the gRPC trait and reads the metadata;
//! `route`, `send`, `receive`, `pull`, `offsets`, `transaction` (with
//! `halves`), `dead_letter`, `recall`, `lite` and `telemetry` hold one family
//! of calls each; `convert` and `body` map messages between v5 and Remoting;
//! `status` the codes; `limits`, `budget` and `guard` the endpoint's limits;
//! `backend` the Remoting side, `local` the in-broker one (`proxyMode=local`);
//! `renew` push consumers' receipt-handle auto-renew; `tls` the port's TLS;
//! `auth` checks ACL 1.0 signatures and `auth_v2` ACL 2.0 users and ACLs,
//! with `replay` bounding how long a signature holds.
//!
//! Depends on `ferrocket-client`, `-protocol`, `-acl` and `-tls`, never on a
//! broker crate: a broker that runs the endpoint in process implements
//! `local::LocalBroker` for it.

// tonic's service trait answers `Result<_, tonic::Status>` (176 bytes):
// the calls that feed it return the same.
#![allow(clippy::result_large_err)]

pub mod auth;
pub mod auth_v2;
pub mod backend;
pub mod body;
pub mod budget;
pub mod convert;
pub mod dead_letter;
pub mod guard;
pub mod halves;
pub mod limits;
pub mod lite;
pub mod local;
pub mod offsets;
pub mod pull;
pub mod recall;
pub mod receive;
pub mod renew;
pub mod replay;
pub mod route;
pub mod send;
pub mod service;
pub mod status;
pub mod telemetry;
pub mod tls;
pub mod transaction;

/// The generated `apache.rocketmq.v2` types, client and server.
#[allow(clippy::all, missing_docs)]
pub mod pb {
    tonic::include_proto!("apache.rocketmq.v2");
}

pub use auth::Access;
pub use auth_v2::{AuthSettings, BrokerUsers, AUTH_SETTINGS};
pub use backend::Backend;
pub use limits::{GrpcLimits, GRPC_SETTINGS};
pub use local::{BrokerRequests, LocalAnswer, LocalBroker};
pub use renew::{RenewSettings, RENEW_SETTINGS};
pub use service::{serve, serve_incoming, ProxyConfig, Security};

/// Default gRPC port of RocketMQ's proxy (`grpcServerPort`).
pub const GRPC_PORT_DEFAULT: u16 = 8081;
