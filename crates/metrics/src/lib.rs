//! Ferrocket's Prometheus side, shared by the broker and the name server:
//! fixed-bucket histograms ([`histogram`]), OpenMetrics text with
//! RocketMQ 5's naming ([`exposition`]), the request-latency family
//! ([`rpc`]) and the `/metrics` endpoint on a glommio executor ([`http`]).
//! Counting stays with each server (per-shard cells, summed on scrape);
//! this crate only writes and serves what they gathered.

pub mod config;
pub mod exposition;
pub mod histogram;
pub mod http;
pub mod rpc;
