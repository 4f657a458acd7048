//! The Prometheus endpoint (`metricsExporterType=PROM`): a small HTTP/1.1
//! server on shard 0 at `metricsPromExporterHost:metricsPromExporterPort`
//! serving `/metrics` (and `/`, as Java's exporter does) and `/-/healthy`.
//! One request per connection, bounded in size, time and count.

use std::cell::Cell;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use ferrocket_runtime::server::{bind_listener, bind_waiting};
use futures_lite::{future, AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};

use crate::error::BrokerError;
use crate::services::metrics::render::{render, CONTENT_TYPE};
use crate::shard::metrics::scrape;
use crate::shard::Shard;

/// Largest request head read.
const REQUEST_BYTES_MAX: usize = 8 * 1024;
/// Most scrapes served at once; more connections are closed at once.
const CONNECTIONS_MAX: usize = 16;
/// A client has this long to send its request, and to take the answer.
const IO_TIMEOUT_MS: u64 = 5_000;
/// Most headers parsed in a request.
const HEADERS_MAX: usize = 32;

/// Binds the endpoint (a busy port fails the start).
pub(crate) fn bind(shard: &Shard) -> Result<TcpListener, BrokerError> {
    let config = shard.config();
    let addr = config
        .metrics
        .listen(&config.broker_ip1, config.listen_addr)?;
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
    let open = Rc::new(Cell::new(0usize));
    loop {
        let accepted = future::or(async { Some(listener.accept().await) }, async {
            shard.stopping.wait().await;
            None
        })
        .await;
        match accepted {
            None => return,
            Some(Ok(stream)) if open.get() < CONNECTIONS_MAX => {
                open.set(open.get() + 1);
                let (shard, open) = (Rc::clone(&shard), Rc::clone(&open));
                glommio::spawn_local(async move {
                    if let Err(e) = serve(&shard, stream).await {
                        tracing::debug!("metrics request failed: {e}");
                    }
                    open.set(open.get() - 1);
                })
                .detach();
            }
            // Over the limit: dropping the stream closes it.
            Some(Ok(_)) => tracing::debug!("metrics endpoint busy, connection closed"),
            Some(Err(e)) => {
                tracing::warn!("metrics accept failed: {e}");
                if shard
                    .stopping
                    .interrupts_sleep(Duration::from_millis(100))
                    .await
                {
                    return;
                }
            }
        }
    }
}

/// What a request asked for.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    Metrics,
    Healthy,
    NotFound,
    MethodNotAllowed,
}

async fn serve(shard: &Rc<Shard>, mut stream: TcpStream) -> io::Result<()> {
    let timeout = Some(Duration::from_millis(IO_TIMEOUT_MS));
    stream.set_read_timeout(timeout)?;
    stream.set_write_timeout(timeout)?;
    let Some((route, head_only)) = read_request(&mut stream).await? else {
        return respond(
            &mut stream,
            "400 Bad Request",
            "text/plain",
            b"bad request\n",
            false,
        )
        .await;
    };
    match route {
        Route::Metrics => {
            let body = render(scrape(shard).await);
            respond(
                &mut stream,
                "200 OK",
                CONTENT_TYPE,
                body.as_bytes(),
                head_only,
            )
            .await
        }
        Route::Healthy => respond(&mut stream, "200 OK", "text/plain", b"OK\n", head_only).await,
        Route::NotFound => {
            let body = b"not found: try /metrics\n";
            respond(&mut stream, "404 Not Found", "text/plain", body, head_only).await
        }
        Route::MethodNotAllowed => {
            let body = b"only GET and HEAD\n";
            respond(
                &mut stream,
                "405 Method Not Allowed",
                "text/plain",
                body,
                false,
            )
            .await
        }
    }
}

/// Reads a request head; `None` when it is not HTTP or too large.
async fn read_request(stream: &mut TcpStream) -> io::Result<Option<(Route, bool)>> {
    let mut buf = vec![0u8; REQUEST_BYTES_MAX];
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            return Ok(None);
        }
        let n = stream.read(&mut buf[filled..]).await?;
        if n == 0 {
            return Ok(None);
        }
        filled += n;
        let mut headers = [httparse::EMPTY_HEADER; HEADERS_MAX];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buf[..filled]) {
            Ok(httparse::Status::Complete(_)) => {
                let method = request.method.unwrap_or("");
                let path = request.path.unwrap_or("");
                return Ok(Some((route(method, path), method == "HEAD")));
            }
            Ok(httparse::Status::Partial) => continue,
            Err(_) => return Ok(None),
        }
    }
}

fn route(method: &str, path: &str) -> Route {
    if method != "GET" && method != "HEAD" {
        return Route::MethodNotAllowed;
    }
    let path = path.split('?').next().unwrap_or("");
    match path {
        "/" | "/metrics" => Route::Metrics,
        "/-/healthy" => Route::Healthy,
        _ => Route::NotFound,
    }
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
    head_only: bool,
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    if !head_only {
        stream.write_all(body).await?;
    }
    stream.flush().await?;
    stream.close().await
}

#[cfg(test)]
mod tests {
    use super::{route, Route};

    #[test]
    fn paths_route_as_javas_exporter_serves_them() {
        assert_eq!(route("GET", "/metrics"), Route::Metrics);
        assert_eq!(route("GET", "/"), Route::Metrics);
        assert_eq!(route("GET", "/metrics?name[]=x"), Route::Metrics);
        assert_eq!(route("HEAD", "/-/healthy"), Route::Healthy);
        assert_eq!(route("GET", "/other"), Route::NotFound);
        assert_eq!(route("POST", "/metrics"), Route::MethodNotAllowed);
    }
}
