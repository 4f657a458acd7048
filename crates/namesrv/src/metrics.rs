//! The name server's `/metrics` (`metricsExporterType=PROM`; Java's name
//! server exports nothing, so these are Ferrocket's): the latency of every
//! request under RocketMQ's `rocketmq_rpc_latency` family, and how many
//! brokers and topics are registered.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;

use ferrocket_metrics::config::NAMESRV_METRICS_PROM_PORT_DEFAULT;
use ferrocket_metrics::exposition::{render, Writer};
use ferrocket_metrics::rpc::RpcLatencies;
use ferrocket_runtime::server::{bind_listener, bind_waiting};
use glommio::net::TcpListener;

use crate::config::NamesrvConfig;
use crate::error::NamesrvError;
use crate::processor::NamesrvHandler;

/// What one scrape shows.
#[derive(Debug, Clone)]
struct Figures {
    rpc: RpcLatencies,
    brokers: usize,
    topics: usize,
}

/// Binds the endpoint when it is on; a busy port fails the start.
pub(crate) fn bind(config: &NamesrvConfig) -> Result<Option<TcpListener>, NamesrvError> {
    if !config.metrics.enabled() {
        return Ok(None);
    }
    let addr = config
        .metrics
        .listen("", config.listen_addr, NAMESRV_METRICS_PROM_PORT_DEFAULT)
        .map_err(NamesrvError::Config)?;
    let listener = bind_waiting(addr, || bind_listener(addr, false))
        .map_err(|source| NamesrvError::Bind { addr, source })?;
    let bound = listener.local_addr().map_err(|e| NamesrvError::Bind {
        addr,
        source: io::Error::other(e.to_string()),
    })?;
    tracing::info!(%bound, "Prometheus metrics endpoint listening (/metrics)");
    Ok(Some(listener))
}

/// Serves scrapes until the task is dropped.
pub(crate) async fn serve(
    listener: TcpListener,
    handler: Rc<NamesrvHandler>,
    config: &NamesrvConfig,
    bound: SocketAddr,
) {
    let mut common = vec![
        ("node_type".to_string(), "namesrv".to_string()),
        ("node_id".to_string(), bound.to_string()),
    ];
    common.extend(config.metrics.labels.iter().cloned());
    let scrape = move || {
        let (brokers, topics) = handler.counts();
        let figures = Figures {
            rpc: handler.rpc.borrow().clone(),
            brokers,
            topics,
        };
        let text = render(figures, common.clone(), write);
        std::future::ready(text)
    };
    ferrocket_metrics::http::serve(listener, std::future::pending(), scrape).await;
}

fn write(w: &mut Writer<'_, '_>, figures: &Figures) -> fmt::Result {
    figures.rpc.write(w)?;
    let one = |value: usize| vec![(vec![], value as i64)];
    w.gauge(
        "ferrocket_namesrv_brokers",
        "Broker addresses registered",
        None,
        one(figures.brokers),
    )?;
    w.gauge(
        "ferrocket_namesrv_topics",
        "Topics with a route",
        None,
        one(figures.topics),
    )?;
    w.counter(
        "ferrocket_metrics_series_dropped",
        "Counts that found no room for a new series",
        vec![(vec![], figures.rpc.dropped)],
    )
}
