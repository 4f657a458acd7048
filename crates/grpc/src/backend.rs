//! The Remoting side of the proxy: the name server's routes and one
//! connection pool to the brokers they list. The proxy connects only to
//! addresses the name server gave it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferrocket_client::{ClientError, ConnectionConfig, ConnectionPool, NameServerClient};
use ferrocket_protocol::body::TopicRouteData;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;

use crate::pb::{Code, Status};
use crate::status::status;
use crate::telemetry::Sessions;

/// Everything a call needs: routes, broker connections, client sessions.
pub struct Backend {
    namesrv: NameServerClient,
    next: AtomicUsize,
    pub sessions: Sessions,
}

impl Backend {
    /// A backend for the cluster behind the name servers `namesrv_addr`
    /// ("host:port;host:port").
    pub fn new(namesrv_addr: &str) -> Result<Arc<Self>, ClientError> {
        let pool = ConnectionPool::new(ConnectionConfig::default(), None);
        let namesrv = NameServerClient::new(namesrv_addr, pool)?;
        Ok(Arc::new(Backend {
            namesrv,
            next: AtomicUsize::new(0),
            sessions: Sessions::default(),
        }))
    }

    /// A number that grows by one a call: round-robin choices.
    pub fn next_index(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The topic's route (cached briefly, as clients cache it).
    pub async fn route(&self, topic: &str) -> Result<Arc<TopicRouteData>, Status> {
        self.namesrv
            .route(topic)
            .await
            .map_err(|e| client_status(&e))
    }

    /// The master address of `broker_name`.
    pub async fn broker_addr(&self, broker_name: &str) -> Result<String, Status> {
        self.namesrv
            .find_master_addr(broker_name)
            .await
            .map_err(|e| client_status(&e))
    }

    /// `request` to the broker at `addr`, waiting at most `timeout`.
    pub async fn invoke(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, Status> {
        self.namesrv
            .pool()
            .invoke_timeout(addr, request, timeout)
            .await
            .map_err(|e| client_status(&e))
    }

    /// `request` to the master of `broker_name`.
    pub async fn invoke_broker(
        &self,
        broker_name: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, Status> {
        let addr = self.broker_addr(broker_name).await?;
        self.invoke(&addr, request, timeout).await
    }
}

/// The v5 status for a failed Remoting call.
pub fn client_status(error: &ClientError) -> Status {
    match error {
        ClientError::Timeout { .. } => status(Code::ProxyTimeout, error.to_string()),
        ClientError::Response { code, remark } if *code == response_code::TOPIC_NOT_EXIST => {
            status(Code::TopicNotFound, remark.clone())
        }
        ClientError::Response { code, remark } => crate::status::from_answer(*code, Some(remark)),
        ClientError::NoRoute(topic) => {
            status(Code::TopicNotFound, format!("no route for topic {topic}"))
        }
        _ => status(Code::InternalServerError, error.to_string()),
    }
}
