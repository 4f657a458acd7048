//! The tower layer in front of every call: it counts the call against its
//! connection's [`Budget`](crate::budget::Budget), charges its headers and
//! the messages its body announces (tonic reserves a message's announced
//! length at once), and answers RESOURCE_EXHAUSTED past a bound. With ACL
//! on, a connection is held to the small unauthenticated budget until a
//! call's headers carry valid credentials (checked before its body is read).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http::{Request, Response};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use tonic::body::BoxBody;
use tonic::transport::server::TcpConnectInfo;

use crate::auth::Access;
use crate::budget::{Budget, CallSlot, Charge, Conn, Refused};
use crate::limits::GRPC_MESSAGE_BYTES_MAX;

/// What the layer learns of a call's connection (the connection's
/// `ConnectInfo`, see `tls::GrpcIo`).
#[derive(Clone, Debug)]
pub struct ConnInfo {
    pub tcp: TcpConnectInfo,
    pub conn: Arc<Conn>,
}

/// Bytes counted for each header besides its name and value (HPACK's).
const HEADER_OVERHEAD: usize = 32;
/// A gRPC message's prefix: a compression flag and a 4-byte length.
const PREFIX: usize = 5;

#[derive(Clone)]
pub struct GuardLayer {
    pub budget: Arc<Budget>,
    pub access: Access,
}

impl<S> tower_layer::Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard {
            inner,
            budget: Arc::clone(&self.budget),
            access: self.access.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Guard<S> {
    inner: S,
    budget: Arc<Budget>,
    access: Access,
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S> tower_service::Service<Request<BoxBody>> for Guard<S>
where
    S: tower_service::Service<Request<BoxBody>, Response = Response<BoxBody>>,
    S::Future: Send + 'static,
{
    type Response = Response<BoxBody>;
    type Error = S::Error;
    type Future = BoxFuture<Response<BoxBody>, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<BoxBody>) -> Self::Future {
        let Some(info) = request.extensions().get::<ConnInfo>().cloned() else {
            // Not from our listener (never so in the endpoint): unguarded.
            return Box::pin(self.inner.call(request));
        };
        // What `Request::remote_addr` reads, for the ACL's address checks.
        request.extensions_mut().insert(info.tcp.clone());
        let admitted = self.admit(&info, &mut request);
        let (slot, headers) = match admitted {
            Ok(held) => held,
            Err(refused) => {
                tracing::debug!(peer = ?info.tcp.remote_addr, "gRPC call refused: {}", refused.0);
                let answer = refused.status().into_http();
                return Box::pin(async move { Ok(answer) });
            }
        };
        let answered = self.inner.call(request);
        Box::pin(async move {
            let response = answered.await?;
            // Held until the answer's last frame is gone: a streaming call
            // counts for as long as it streams.
            let held = (slot, headers);
            Ok(response.map(|body| {
                body.map_frame(move |frame| {
                    let _ = &held;
                    frame
                })
                .boxed_unsync()
            }))
        })
    }
}

impl<S> Guard<S> {
    /// Counts the call and its headers, and meters its body.
    fn admit(
        &self,
        info: &ConnInfo,
        request: &mut Request<BoxBody>,
    ) -> Result<(CallSlot, Charge), Refused> {
        let conn = &info.conn;
        if self.budget.restricted(conn) {
            let peer = info.tcp.remote_addr.map(|a| a.ip());
            if self.access.authenticates(request.headers(), peer) {
                conn.authenticated();
            }
        }
        let slot = self.budget.begin_call(conn)?;
        let header_bytes = request
            .headers()
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len() + HEADER_OVERHEAD)
            .sum::<usize>()
            + request.uri().path().len();
        let headers = self.budget.charge(conn, header_bytes)?;
        let body = std::mem::replace(request.body_mut(), tonic::body::empty_body());
        let metered = Metered {
            inner: body,
            meter: Meter::new(Arc::clone(&self.budget), Arc::clone(conn)),
        };
        *request.body_mut() = metered.boxed_unsync();
        Ok((slot, headers))
    }
}

/// A request body whose announced messages are charged before tonic
/// reserves room for them.
struct Metered {
    inner: BoxBody,
    meter: Meter,
}

impl Body for Metered {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let this = self.as_mut().get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    if let Err(refused) = this.meter.on_data(data.chunk()) {
                        return Poll::Ready(Some(Err(refused.status())));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Follows the gRPC framing of a body: the charge is the largest message
/// announced so far (tonic keeps a buffer that large while the call lasts).
struct Meter {
    budget: Arc<Budget>,
    conn: Arc<Conn>,
    prefix: [u8; PREFIX],
    prefix_len: usize,
    /// Bytes of the current message still to come.
    remaining: usize,
    held: Option<Charge>,
}

impl Meter {
    fn new(budget: Arc<Budget>, conn: Arc<Conn>) -> Meter {
        Meter {
            budget,
            conn,
            prefix: [0; PREFIX],
            prefix_len: 0,
            remaining: 0,
            held: None,
        }
    }

    fn on_data(&mut self, mut data: &[u8]) -> Result<(), Refused> {
        while !data.is_empty() {
            if self.remaining > 0 {
                let take = self.remaining.min(data.len());
                self.remaining -= take;
                data = &data[take..];
                continue;
            }
            let take = (PREFIX - self.prefix_len).min(data.len());
            self.prefix[self.prefix_len..self.prefix_len + take].copy_from_slice(&data[..take]);
            self.prefix_len += take;
            data = &data[take..];
            if self.prefix_len == PREFIX {
                self.prefix_len = 0;
                let announced = u32::from_be_bytes([
                    self.prefix[1],
                    self.prefix[2],
                    self.prefix[3],
                    self.prefix[4],
                ]) as usize;
                self.announce(announced)?;
                self.remaining = announced;
            }
        }
        Ok(())
    }

    fn announce(&mut self, announced: usize) -> Result<(), Refused> {
        // tonic refuses a message past its largest without reserving.
        let reserved = announced.min(GRPC_MESSAGE_BYTES_MAX);
        match &mut self.held {
            Some(held) => held.grow_to(reserved),
            None => {
                self.held = Some(self.budget.charge(&self.conn, reserved)?);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::GrpcLimits;

    fn framed(len: u32) -> Vec<u8> {
        let mut out = vec![0u8];
        out.extend_from_slice(&len.to_be_bytes());
        out.resize(PREFIX + len as usize, 7u8);
        out
    }

    #[test]
    fn the_meter_charges_the_largest_announced_message_across_splits() {
        let budget = Budget::new(GrpcLimits::default(), false);
        let conn = Arc::new(Conn::default());
        let mut meter = Meter::new(Arc::clone(&budget), Arc::clone(&conn));
        let mut body = framed(10);
        body.extend(framed(300));
        body.extend(framed(20));
        for piece in body.chunks(3) {
            meter.on_data(piece).expect("within the budget");
        }
        assert_eq!(conn.held(), 300);
        drop(meter);
        assert_eq!((conn.held(), budget.held()), (0, 0));
    }

    #[test]
    fn an_announced_message_past_the_budget_is_refused_before_it_arrives() {
        let limits = GrpcLimits {
            connection_call_bytes_max: 1000,
            ..GrpcLimits::default()
        };
        let budget = Budget::new(limits, false);
        let conn = Arc::new(Conn::default());
        let mut meter = Meter::new(budget, Arc::clone(&conn));
        let prefix = [0u8, 0, 0, 4, 0];
        assert!(meter.on_data(&prefix).is_err(), "1024 bytes announced");
        assert_eq!(conn.held(), 0);
    }
}
