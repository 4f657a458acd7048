//! `ferrocket proxy --metrics-port PORT`: the Prometheus endpoint of the
//! proxy, with what Java's proxy exports (`ProxyMetricsManager`):
//! `rocketmq_proxy_up` with `node_type="proxy"`, `cluster`, `node_id` and
//! `proxy_mode="cluster"`. Served on the proxy's tokio runtime with the
//! same HTTP rules as the broker's endpoint (`ferrocket_metrics::http`).

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use ferrocket_metrics::exposition::{render, Writer};
use ferrocket_metrics::http::{
    parse_head, response_bytes, Head, Route, IO_TIMEOUT_MS, REQUEST_BYTES_MAX,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The labels every series carries.
#[derive(Debug, Clone)]
pub struct ProxyLabels {
    pub cluster: String,
    pub node_id: String,
}

fn write(w: &mut Writer<'_, '_>, _: &()) -> fmt::Result {
    let up = vec![(vec![("proxy_mode", "cluster".to_string())], 1)];
    w.gauge("rocketmq_proxy_up", "proxy status", None, up)
}

fn exposition(labels: &ProxyLabels) -> String {
    let common = vec![
        ("node_type".to_string(), "proxy".to_string()),
        ("cluster".to_string(), labels.cluster.clone()),
        ("node_id".to_string(), labels.node_id.clone()),
    ];
    render((), common, write)
}

/// Binds `addr` (a busy port fails the start).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, String> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot bind the metrics endpoint on {addr} (--metrics-port): {e}"))?;
    if let Ok(bound) = listener.local_addr() {
        tracing::info!(%bound, "Prometheus metrics endpoint listening (/metrics)");
    }
    Ok(listener)
}

/// Serves scrapes until the runtime stops.
pub async fn serve(listener: TcpListener, labels: ProxyLabels) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let labels = labels.clone();
        tokio::spawn(async move {
            let timeout = Duration::from_millis(IO_TIMEOUT_MS);
            if tokio::time::timeout(timeout, answer(stream, &labels))
                .await
                .is_err()
            {
                tracing::debug!("metrics request timed out");
            }
        });
    }
}

async fn answer(mut stream: TcpStream, labels: &ProxyLabels) -> std::io::Result<()> {
    let mut buf = vec![0u8; REQUEST_BYTES_MAX];
    let mut filled = 0;
    let head = loop {
        let n = stream.read(&mut buf[filled..]).await?;
        if n == 0 {
            break Head::Bad;
        }
        filled += n;
        match parse_head(&buf[..filled]) {
            Head::Partial => continue,
            done => break done,
        }
    };
    let metrics = matches!(
        head,
        Head::Request {
            route: Route::Metrics,
            ..
        }
    )
    .then(|| exposition(labels));
    stream.write_all(&response_bytes(head, metrics)).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxy_reports_itself_up() {
        let labels = ProxyLabels {
            cluster: "DefaultCluster".into(),
            node_id: "127.0.0.1:8081".into(),
        };
        let text = exposition(&labels);
        assert!(text.contains(
            r#"rocketmq_proxy_up{node_type="proxy",cluster="DefaultCluster",node_id="127.0.0.1:8081",proxy_mode="cluster"} 1"#
        ), "{text}");
    }
}
