//! The Prometheus endpoint (`metricsExporterType=PROM`) on shard 0, at
//! `metricsPromExporterHost:metricsPromExporterPort`: each scrape gathers
//! every shard's figures (`shard::metrics`); the HTTP side is
//! `ferrocket_metrics::http`.

use std::io;
use std::rc::Rc;

use ferrocket_runtime::server::{bind_listener, bind_waiting};
use glommio::net::TcpListener;

use crate::config::METRICS_PROM_PORT_DEFAULT;
use crate::error::BrokerError;
use crate::services::metrics::render::render;
use crate::shard::metrics::scrape;
use crate::shard::Shard;

/// Binds the endpoint (a busy port fails the start).
pub(crate) fn bind(shard: &Shard) -> Result<TcpListener, BrokerError> {
    let config = shard.config();
    let addr = config
        .metrics
        .listen(
            &config.broker_ip1,
            config.listen_addr,
            METRICS_PROM_PORT_DEFAULT,
        )
        .map_err(BrokerError::Config)?;
    let bind_error = |source| BrokerError::Bind {
        addr,
        source,
        port_key: "metricsPromExporterPort",
    };
    let listener = bind_waiting(addr, || bind_listener(addr, false)).map_err(bind_error)?;
    let bound = listener
        .local_addr()
        .map_err(|e| bind_error(io::Error::other(e.to_string())))?;
    tracing::info!(%bound, "Prometheus metrics endpoint listening (/metrics)");
    Ok(listener)
}

/// Serves scrapes until the shard stops.
pub(crate) async fn accept_loop(shard: Rc<Shard>, listener: TcpListener) {
    let stopping = Rc::clone(&shard);
    let stop = async move { stopping.stopping().wait().await };
    let scrape_of = move || {
        let shard = Rc::clone(&shard);
        async move { render(scrape(&shard).await) }
    };
    ferrocket_metrics::http::serve(listener, stop, scrape_of).await;
}
