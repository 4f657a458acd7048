//! The Remoting side of the proxy: the name server's routes and one
//! connection pool to the brokers they list. The proxy connects only to
//! addresses the name server gave it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferrocket_client::{
    ClientError, ConnectionConfig, ConnectionPool, NameServerClient, RequestHandler,
};
use ferrocket_protocol::body::TopicRouteData;
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use tokio::sync::mpsc;

use crate::halves::Halves;
use crate::local::LocalBroker;
use crate::pb::{Code, Status};
use crate::status::status;
use crate::telemetry::Sessions;

/// Requests brokers send the proxy (transaction checks) waiting for the
/// proxy's task; more are dropped (a broker checks again later).
const BROKER_REQUESTS_QUEUED_MAX: usize = 4096;

/// Everything a call needs: routes, broker connections, client sessions.
pub struct Backend {
    namesrv: NameServerClient,
    /// Local mode: the broker this endpoint runs in, called in process.
    local: Option<Arc<dyn LocalBroker>>,
    next: AtomicUsize,
    pub sessions: Sessions,
    pub halves: Halves,
    /// Lite consumers' subscriptions.
    pub lite: crate::lite::LiteSubscriptions,
}

impl Backend {
    /// A backend for the cluster behind the name servers `namesrv_addr`
    /// ("host:port;host:port").
    /// Requests the brokers send (CHECK_TRANSACTION_STATE) come out of the
    /// receiver.
    /// `credentials` sign every Remoting request (brokers with ACL on).
    /// With `local`, requests for that broker's address are its in-process
    /// calls, and its requests come out of the same receiver.
    pub fn new(
        namesrv_addr: &str,
        credentials: Option<ferrocket_client::Credentials>,
        tls: Option<Arc<ferrocket_tls::rustls::ClientConfig>>,
        local: Option<Arc<dyn LocalBroker>>,
    ) -> Result<(Arc<Self>, mpsc::Receiver<RemotingCommand>), ClientError> {
        let (requests, received) = mpsc::channel(BROKER_REQUESTS_QUEUED_MAX);
        let take = Arc::new(move |request: RemotingCommand| {
            if request.code == request_code::CHECK_TRANSACTION_STATE
                && requests.try_send(request).is_err()
            {
                tracing::warn!("transaction checks queue full; a check is dropped");
            }
        });
        if let Some(local) = &local {
            local.on_requests(take.clone());
        }
        let handler: RequestHandler = Arc::new(move |request: RemotingCommand| {
            take(request);
            None
        });
        let config = ConnectionConfig {
            credentials,
            tls,
            ..ConnectionConfig::default()
        };
        let pool = ConnectionPool::new(config, Some(handler));
        let namesrv = NameServerClient::new(namesrv_addr, pool)?;
        let backend = Arc::new(Backend {
            namesrv,
            local,
            next: AtomicUsize::new(0),
            sessions: Sessions::default(),
            halves: Halves::default(),
            lite: Default::default(),
        });
        Ok((backend, received))
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

    /// Forgets the cached route of `topic`: the next request reads it again.
    pub fn forget_route(&self, topic: &str) {
        self.namesrv.invalidate(topic);
    }

    /// The master address of `broker_name`.
    pub async fn broker_addr(&self, broker_name: &str) -> Result<String, Status> {
        self.namesrv
            .find_master_addr(broker_name)
            .await
            .map_err(|e| client_status(&e))
    }

    /// The first master address the name servers list (sorted).
    pub async fn first_master(&self) -> Result<String, Status> {
        let info = self
            .namesrv
            .cluster_info()
            .await
            .map_err(|e| client_status(&e))?;
        let mut masters: Vec<String> = info
            .broker_addr_table
            .values()
            .filter_map(|data| data.master_addr().map(str::to_string))
            .collect();
        masters.sort();
        masters
            .into_iter()
            .next()
            .ok_or_else(|| status(Code::InternalServerError, "no master broker is registered"))
    }

    /// `request` to the broker at `addr`, waiting at most `timeout`.
    pub async fn invoke(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, Status> {
        if let Some(local) = self.local.as_deref().filter(|local| local.is_local(addr)) {
            let answer = crate::local::invoke(local, request, timeout).await;
            if answer
                .as_ref()
                .is_ok_and(|a| a.code == response_code::SERVICE_NOT_AVAILABLE)
            {
                self.forget_broker(addr, "it is not the master now");
            }
            return answer;
        }
        let answer = self
            .namesrv
            .pool()
            .invoke_timeout(addr, request, timeout)
            .await;
        match &answer {
            Err(e) if e.is_transport() => self.forget_broker(addr, "it did not answer"),
            Ok(a) if a.code == response_code::SERVICE_NOT_AVAILABLE => {
                self.forget_broker(addr, "it is not the master now")
            }
            _ => {}
        }
        answer.map_err(|e| client_status(&e))
    }

    /// Drops the cached routes that name `addr` (a failover may have moved
    /// its set's master): the next request reads the name server's route.
    fn forget_broker(&self, addr: &str, why: &str) {
        let dropped = self.namesrv.forget_broker(addr);
        if dropped > 0 {
            tracing::info!(addr, dropped, "routes naming a broker dropped: {why}");
        }
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
