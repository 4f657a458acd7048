//! The push exporters (`metricsExporterType=OTLP_GRPC` and `LOG`) on shard
//! 0: at each interval it gathers every shard's figures, the same scrape
//! `/metrics` answers with, and hands them to the exporter's own thread
//! (`ferrocket_metrics::push`), which sends or logs them off the shards.

use std::rc::Rc;

use ferrocket_metrics::push::Pusher;

use crate::error::BrokerError;
use crate::services::metrics::render::families;
use crate::shard::metrics::scrape;
use crate::shard::Shard;

/// Starts the exporter's thread (`None` unless OTLP_GRPC or LOG); bad
/// exporter settings fail the start.
pub(crate) fn start(shard: &Shard) -> Result<Option<Pusher>, BrokerError> {
    let config = shard.config();
    Pusher::start(&config.metrics, &resource(&config)).map_err(|reason| BrokerError::Service {
        service: "metrics exporter",
        reason,
    })
}

/// The OTLP resource: what this process is (Java sends an empty one; the
/// series' own attributes carry `cluster`, `node_type` and `node_id` as
/// Java's do).
fn resource(config: &crate::config::BrokerConfig) -> Vec<(String, String)> {
    vec![
        ("service.name".into(), "ferrocket-broker".into()),
        ("service.version".into(), env!("CARGO_PKG_VERSION").into()),
        (
            "service.namespace".into(),
            config.broker_cluster_name.clone(),
        ),
        (
            "service.instance.id".into(),
            format!("{}-{}", config.broker_name, config.broker_id),
        ),
    ]
}

/// Gathers and offers the figures every interval until the shard stops.
pub(crate) async fn push_loop(shard: Rc<Shard>, pusher: Pusher) {
    loop {
        if shard.stopping().interrupts_sleep(pusher.interval).await {
            return;
        }
        let figures = families(&scrape(&shard).await);
        pusher.offer(figures);
    }
}
