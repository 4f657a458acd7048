//! A small HTTP/1.1 server for Prometheus scrapes, on a glommio executor:
//! `/metrics` and `/` (as Java's exporter serves them) answer the scrape,
//! `/-/healthy` answers `OK`. One request per connection, bounded in size,
//! time and count.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use futures_lite::{future, AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};

use crate::exposition::CONTENT_TYPE;

/// Largest request head read.
pub const REQUEST_BYTES_MAX: usize = 8 * 1024;
/// Most scrapes served at once; more connections are closed at once.
const CONNECTIONS_MAX: usize = 16;
/// A client has this long to send its request and take the answer, in all.
pub const IO_TIMEOUT_MS: u64 = 5_000;
/// Most headers parsed in a request.
const HEADERS_MAX: usize = 32;
/// Wait after a failed accept.
const ACCEPT_RETRY_MS: u64 = 100;

/// Serves scrapes from `listener` until `stop` resolves; `scrape` makes
/// each exposition.
pub async fn serve<S, F>(listener: TcpListener, stop: impl Future<Output = ()>, scrape: S)
where
    S: Fn() -> F + Clone + 'static,
    F: Future<Output = String> + 'static,
{
    let open = Rc::new(Cell::new(0usize));
    // One scrape at a time: concurrent requests wait for the running one
    // instead of each gathering every shard's figures.
    let one_scrape = Rc::new(glommio::sync::Semaphore::new(1));
    let mut stop = std::pin::pin!(stop);
    loop {
        // (Finishes the accept in flight at stop: see `accept_unless`.)
        match ferrocket_runtime::server::accept_unless(&listener, stop.as_mut()).await {
            None => return,
            Some(Ok(stream)) if open.get() < CONNECTIONS_MAX => {
                open.set(open.get() + 1);
                let (scrape, open) = (scrape.clone(), Rc::clone(&open));
                let one_scrape = Rc::clone(&one_scrape);
                glommio::spawn_local(async move {
                    // One deadline for the whole exchange: a client trickling
                    // its request a byte at a time cannot hold a slot.
                    let whole = Duration::from_millis(IO_TIMEOUT_MS);
                    let timed_out = async {
                        glommio::timer::sleep(whole).await;
                        Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "request took too long",
                        ))
                    };
                    if let Err(e) = future::or(answer(stream, scrape, &one_scrape), timed_out).await
                    {
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
                glommio::timer::sleep(Duration::from_millis(ACCEPT_RETRY_MS)).await;
            }
        }
    }
}

/// What a request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Metrics,
    Healthy,
    NotFound,
    MethodNotAllowed,
}

/// A request head read so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// More bytes are needed.
    Partial,
    /// Not HTTP, or too large.
    Bad,
    Request {
        route: Route,
        head_only: bool,
    },
}

/// Parses the request head in `buf` (the bytes read so far).
pub fn parse_head(buf: &[u8]) -> Head {
    if buf.len() >= REQUEST_BYTES_MAX {
        return Head::Bad;
    }
    let mut headers = [httparse::EMPTY_HEADER; HEADERS_MAX];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(buf) {
        Ok(httparse::Status::Complete(_)) => {
            let method = request.method.unwrap_or("");
            let path = request.path.unwrap_or("");
            Head::Request {
                route: route(method, path),
                head_only: method == "HEAD",
            }
        }
        Ok(httparse::Status::Partial) => Head::Partial,
        Err(_) => Head::Bad,
    }
}

/// The whole answer to `head` (`Partial` counts as bad); `metrics` is the
/// exposition, needed only for [`Route::Metrics`].
pub fn response_bytes(head: Head, metrics: Option<String>) -> Vec<u8> {
    let (status, content_type, body, head_only): (&str, &str, Vec<u8>, bool) = match head {
        Head::Request {
            route: Route::Metrics,
            head_only,
        } => (
            "200 OK",
            CONTENT_TYPE,
            metrics.unwrap_or_default().into_bytes(),
            head_only,
        ),
        Head::Request {
            route: Route::Healthy,
            head_only,
        } => ("200 OK", "text/plain", b"OK\n".to_vec(), head_only),
        Head::Request {
            route: Route::NotFound,
            head_only,
        } => (
            "404 Not Found",
            "text/plain",
            b"not found: try /metrics\n".to_vec(),
            head_only,
        ),
        Head::Request {
            route: Route::MethodNotAllowed,
            ..
        } => (
            "405 Method Not Allowed",
            "text/plain",
            b"only GET and HEAD\n".to_vec(),
            false,
        ),
        Head::Partial | Head::Bad => (
            "400 Bad Request",
            "text/plain",
            b"bad request\n".to_vec(),
            false,
        ),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(&body);
    }
    out
}

async fn answer<S, F>(
    mut stream: TcpStream,
    scrape: S,
    one_scrape: &glommio::sync::Semaphore,
) -> io::Result<()>
where
    S: Fn() -> F,
    F: Future<Output = String>,
{
    let timeout = Some(Duration::from_millis(IO_TIMEOUT_MS));
    stream.set_read_timeout(timeout)?;
    stream.set_write_timeout(timeout)?;
    let head = read_head(&mut stream).await?;
    let metrics = match head {
        Head::Request {
            route: Route::Metrics,
            ..
        } => {
            let _permit = (one_scrape.acquire_permit(1).await)
                .map_err(|e| io::Error::other(e.to_string()))?;
            Some(scrape().await)
        }
        _ => None,
    };
    stream.write_all(&response_bytes(head, metrics)).await?;
    stream.flush().await?;
    stream.close().await
}

/// Reads until the request head is complete, bad or too large.
async fn read_head(stream: &mut TcpStream) -> io::Result<Head> {
    let mut buf = vec![0u8; REQUEST_BYTES_MAX];
    let mut filled = 0;
    loop {
        let n = stream.read(&mut buf[filled..]).await?;
        if n == 0 {
            return Ok(Head::Bad);
        }
        filled += n;
        match parse_head(&buf[..filled]) {
            Head::Partial => continue,
            done => return Ok(done),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_route_as_javas_exporter_serves_them() {
        assert_eq!(route("GET", "/metrics"), Route::Metrics);
        assert_eq!(route("GET", "/"), Route::Metrics);
        assert_eq!(route("GET", "/metrics?name[]=x"), Route::Metrics);
        assert_eq!(route("HEAD", "/-/healthy"), Route::Healthy);
        assert_eq!(route("GET", "/other"), Route::NotFound);
        assert_eq!(route("POST", "/metrics"), Route::MethodNotAllowed);
    }

    #[test]
    fn heads_and_answers() {
        assert_eq!(
            parse_head(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"),
            Head::Partial
        );
        let head = parse_head(b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        let answer = String::from_utf8(response_bytes(head, Some("x 1\n".into()))).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(answer.contains("Content-Length: 4\r\n") && answer.ends_with("\r\n\r\n"));
        assert_eq!(parse_head(b"\x16\x03\x01 not http"), Head::Bad);
        let bad = String::from_utf8(response_bytes(Head::Bad, None)).unwrap();
        assert!(bad.starts_with("HTTP/1.1 400"));
    }
}
