//! Ferrocket's metrics side, shared by the broker and the name server:
//! fixed-bucket histograms ([`histogram`]), OpenMetrics text with
//! RocketMQ 5's naming ([`exposition`]), the request-latency family
//! ([`rpc`]), the `/metrics` endpoint on a glommio executor ([`http`]),
//! and the same families pushed over OTLP or to the log ([`family`],
//! [`otlp`], [`push`]); the exporter settings ([`config`], declared in
//! [`settings`]). Counting stays with each server (per-shard cells,
//! summed on scrape); this crate only writes, serves and sends what they
//! gathered. Depends on `ferrocket-protocol` and `ferrocket-runtime`.

pub mod config;
pub mod exposition;
pub mod family;
pub mod histogram;
pub mod http;
pub mod otlp;
pub mod push;
pub mod rpc;
pub mod settings;
