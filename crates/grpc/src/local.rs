//! Local mode: the endpoint inside a broker calls that broker in process
//! instead of over loopback Remoting. Requests for the broker's own address
//! go through [`LocalBroker`]; requests for the other brokers a route names
//! still go over Remoting, so a cluster of such brokers serves every topic.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ferrocket_protocol::RemotingCommand;

use crate::pb::{Code, Status};
use crate::status::status;

/// An answer on its way: `None` when the broker stopped before answering.
pub type LocalAnswer = Pin<Box<dyn Future<Output = Option<RemotingCommand>> + Send>>;

/// What the broker sends the endpoint's clients (transaction checks).
pub type BrokerRequests = Arc<dyn Fn(RemotingCommand) + Send + Sync>;

/// The broker this endpoint runs in, as the endpoint calls it.
pub trait LocalBroker: Send + Sync + 'static {
    /// Whether `addr`, an address from a route, is this broker's (the one it
    /// registers with the name servers).
    fn is_local(&self, addr: &str) -> bool;

    /// Hands `request` to the broker, or says why it was not taken.
    fn call(&self, request: RemotingCommand) -> Result<LocalAnswer, Status>;

    /// Where the broker's requests to the endpoint's clients go.
    fn on_requests(&self, requests: BrokerRequests);
}

/// `request` answered by the local broker within `timeout`.
pub async fn invoke(
    broker: &dyn LocalBroker,
    request: RemotingCommand,
    timeout: Duration,
) -> Result<RemotingCommand, Status> {
    let code = request.code;
    let answer = broker.call(request)?;
    match tokio::time::timeout(timeout, answer).await {
        Ok(Some(response)) => Ok(response),
        Ok(None) => Err(status(
            Code::InternalServerError,
            "the broker stopped before it answered",
        )),
        Err(_) => Err(status(
            Code::ProxyTimeout,
            format!(
                "the broker did not answer request {code} within {} ms",
                timeout.as_millis()
            ),
        )),
    }
}
