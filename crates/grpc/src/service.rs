//! The gRPC server: `MessagingService` calls checked for a client id and
//! handed to their family's module.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Streaming};

use crate::auth::Access;
use crate::backend::Backend;
use crate::budget::Budget;
use crate::guard::GuardLayer;
use crate::limits::{GrpcLimits, GRPC_MESSAGE_BYTES_MAX};
use crate::local::LocalBroker;
use crate::pb::messaging_service_server::{MessagingService, MessagingServiceServer};
use crate::pb::{self, Code};
use crate::renew::Renewals;
use crate::status::ok;
use crate::{offsets, pull, renew, route, send, telemetry, transaction};

/// Largest header block of a call (SETTINGS_MAX_HEADER_LIST_SIZE,
/// hyper's default, said here).
const HEADER_LIST_BYTES_MAX: u32 = 16 << 10;
/// Data a client may send on one stream, and on one connection, before the
/// endpoint reads it (HTTP/2 flow control; hyper's defaults, said here).
const STREAM_WINDOW_BYTES: u32 = 1 << 20;
const CONNECTION_WINDOW_BYTES: u32 = 1 << 20;

/// The metadata key every v5 client sends with its id.
const CLIENT_ID: &str = "x-mq-client-id";

/// Where the proxy listens and which cluster it serves.
#[derive(Clone)]
pub struct ProxyConfig {
    pub listen: SocketAddr,
    /// Name servers, "host:port;host:port".
    pub namesrv_addr: String,
    pub security: Security,
    /// `tls.server.mode` on the port; `None`: plaintext only.
    pub tls: Option<Arc<ferrocket_tls::ServerTls>>,
    /// What clients may make the endpoint hold.
    pub limits: GrpcLimits,
}

/// ACL 1.0 on both sides of the proxy: the accounts v5 clients are checked
/// against, and the account its own Remoting calls are signed with; TLS
/// towards the brokers; and what the proxy does for its clients on its own
/// (auto-renew).
#[derive(Clone, Default)]
pub struct Security {
    pub access: Access,
    pub credentials: Option<ferrocket_client::Credentials>,
    /// TLS for the proxy's calls to name servers and brokers (`tls.enable`,
    /// or an enforcing mode); `None`: plaintext.
    pub client_tls: Option<Arc<ferrocket_tls::rustls::ClientConfig>>,
    /// Push consumers' receipt-handle auto-renew.
    pub renew: crate::RenewSettings,
}

/// Binds `config.listen` and serves until `shutdown` completes. `bound`
/// is told the address actually bound (port 0 picks one).
pub async fn serve(
    config: ProxyConfig,
    bound: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    let local = listener.local_addr()?;
    bound(local);
    let incoming = crate::tls::incoming(listener, config.tls, config.limits.connections_max);
    serve_incoming(
        &config.namesrv_addr,
        config.security,
        config.limits,
        local,
        None,
        incoming,
        shutdown,
    )
    .await
}

/// Serves the connections `incoming` yields (the in-broker endpoint: the
/// broker hands over its HTTP/2 connections, see
/// [`handed_over`](crate::tls::handed_over)) until `shutdown` completes.
/// `local` names this endpoint to the brokers (in the producer heartbeat).
/// With a `broker` (local mode), that broker's requests are in-process
/// calls.
pub async fn serve_incoming<S>(
    namesrv_addr: &str,
    security: Security,
    limits: GrpcLimits,
    local: SocketAddr,
    broker: Option<Arc<dyn LocalBroker>>,
    incoming: S,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
where
    S: Stream<Item = std::io::Result<crate::tls::GrpcIo>> + Send + 'static,
{
    let (backend, broker_requests) = Backend::new(
        namesrv_addr,
        security.credentials,
        security.client_tls,
        broker,
    )?;
    // Push consumers' handles being renewed (`renew`).
    let renewals = Arc::new(Renewals::new(security.renew));
    let mut background = start_background(&backend, broker_requests, local);
    background.extend(reload_acl(&security.access));
    if let Some(users) = &security.access.users {
        background.push(crate::auth_v2::refresh_loop(
            Arc::clone(users),
            Arc::clone(&backend),
        ));
    }
    let mut access = security.access;
    access.request_time_skew_ms = limits.request_time_skew_ms;
    let guard = GuardLayer {
        budget: Budget::new(limits.clone(), access.enabled()),
        access: access.clone(),
    };
    let service = MessagingServiceServer::new(Proxy {
        backend,
        renewals,
        access,
    })
    .max_decoding_message_size(GRPC_MESSAGE_BYTES_MAX)
    .max_encoding_message_size(GRPC_MESSAGE_BYTES_MAX);
    let served = tonic::transport::Server::builder()
        // hyper's own bounds: streams per connection (REFUSED_STREAM past
        // it), header bytes per call, data a client may send unread.
        .max_concurrent_streams(limits.streams_per_connection)
        .http2_max_header_list_size(HEADER_LIST_BYTES_MAX)
        .initial_stream_window_size(STREAM_WINDOW_BYTES)
        .initial_connection_window_size(CONNECTION_WINDOW_BYTES)
        .layer(guard)
        .add_service(service)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await;
    for task in background {
        task.abort();
    }
    served?;
    Ok(())
}

/// The proxy's own loops: broker requests (transaction checks) to their
/// producers, and the producer heartbeat that makes brokers send them here.
fn start_background(
    backend: &Arc<Backend>,
    mut broker_requests: tokio::sync::mpsc::Receiver<ferrocket_protocol::RemotingCommand>,
    local: SocketAddr,
) -> Vec<tokio::task::JoinHandle<()>> {
    let checks = {
        let backend = Arc::clone(backend);
        tokio::spawn(async move {
            while let Some(check) = broker_requests.recv().await {
                transaction::on_check(&backend, &check);
            }
        })
    };
    let heartbeat = {
        let backend = Arc::clone(backend);
        let client_id = format!("ferrocket-proxy@{local}@{}", std::process::id());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(transaction::PRODUCER_HEARTBEAT_INTERVAL);
            loop {
                tick.tick().await;
                transaction::heartbeat_producers(&backend, &client_id).await;
            }
        })
    };
    vec![checks, heartbeat]
}

struct Proxy {
    backend: Arc<Backend>,
    renewals: Arc<Renewals>,
    access: Access,
}

/// Reads the ACL files again when they change, as the broker does.
fn reload_acl(access: &Access) -> Option<tokio::task::JoinHandle<()>> {
    let acl = access.acl.clone()?;
    Some(tokio::spawn(async move {
        let interval = std::time::Duration::from_millis(ferrocket_acl::RELOAD_INTERVAL_MS);
        let mut tick = tokio::time::interval(interval);
        loop {
            tick.tick().await;
            match acl.reload_if_changed() {
                Ok(true) => tracing::info!("ACL files changed; reloaded"),
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(%error, "ACL files changed but do not load; the old ACL stays")
                }
            }
        }
    }))
}

type Answer<T> = Result<Response<T>, tonic::Status>;
type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, tonic::Status>> + Send>>;

/// The caller's client id; every v5 client sends one.
fn client_id<T>(request: &Request<T>) -> Result<String, tonic::Status> {
    request
        .metadata()
        .get(CLIENT_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            tonic::Status::invalid_argument(format!(
                "{CLIENT_ID} is required (code {})",
                Code::ClientIdRequired as i32
            ))
        })
}

fn stream_of<T: Send + 'static>(items: Vec<T>) -> BoxStream<T> {
    Box::pin(tokio_stream::iter(items.into_iter().map(Ok)))
}

#[tonic::async_trait]
impl MessagingService for Proxy {
    async fn query_route(
        &self,
        request: Request<pb::QueryRouteRequest>,
    ) -> Answer<pb::QueryRouteResponse> {
        client_id(&request)?;
        self.access.authorize(&request)?;
        Ok(Response::new(
            route::query_route(&self.backend, request.into_inner()).await,
        ))
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Answer<pb::HeartbeatResponse> {
        client_id(&request)?;
        self.access.authorize(&request)?;
        Ok(Response::new(pb::HeartbeatResponse { status: Some(ok()) }))
    }

    async fn send_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Answer<pb::SendMessageResponse> {
        client_id(&request)?;
        self.access.authorize(&request)?;
        Ok(Response::new(
            send::send_message(&self.backend, request.into_inner()).await,
        ))
    }

    async fn query_assignment(
        &self,
        request: Request<pb::QueryAssignmentRequest>,
    ) -> Answer<pb::QueryAssignmentResponse> {
        client_id(&request)?;
        self.access.authorize(&request)?;
        Ok(Response::new(
            route::query_assignment(&self.backend, request.into_inner()).await,
        ))
    }

    type ReceiveMessageStream = BoxStream<pb::ReceiveMessageResponse>;

    async fn receive_message(
        &self,
        request: Request<pb::ReceiveMessageRequest>,
    ) -> Answer<Self::ReceiveMessageStream> {
        let client = client_id(&request)?;
        self.access.authorize(&request)?;
        let request = request.into_inner();
        let items =
            renew::calls::receive_message(&self.backend, &self.renewals, &client, request).await;
        Ok(Response::new(stream_of(items)))
    }

    async fn ack_message(
        &self,
        request: Request<pb::AckMessageRequest>,
    ) -> Answer<pb::AckMessageResponse> {
        let client = client_id(&request)?;
        self.access.authorize(&request)?;
        let request = request.into_inner();
        Ok(Response::new(
            renew::calls::ack_message(&self.backend, &self.renewals, &client, request).await,
        ))
    }

    async fn forward_message_to_dead_letter_queue(
        &self,
        request: Request<pb::ForwardMessageToDeadLetterQueueRequest>,
    ) -> Answer<pb::ForwardMessageToDeadLetterQueueResponse> {
        let client = client_id(&request)?;
        self.access.authorize(&request)?;
        let request = request.into_inner();
        Ok(Response::new(
            renew::calls::forward_to_dead_letter(&self.backend, &self.renewals, &client, request)
                .await,
        ))
    }

    type PullMessageStream = BoxStream<pb::PullMessageResponse>;

    async fn pull_message(
        &self,
        request: Request<pb::PullMessageRequest>,
    ) -> Answer<Self::PullMessageStream> {
        client_id(&request)?;
        self.access.authorize(&request)?;
        let items = pull::pull_message(&self.backend, request.into_inner()).await;
        Ok(Response::new(stream_of(items)))
    }

    async fn update_offset(
        &self,
        request: Request<pb::UpdateOffsetRequest>,
    ) -> Answer<pb::UpdateOffsetResponse> {
        client_id(&request)?;
        self.access.authorize(&request)?;
        Ok(Response::new(
            offsets::update_offset(&self.backend, request.into_inner()).await,
        ))
    }

    async fn get_offset(
        &self,
        request: Request<pb::GetOffsetRequest>,
    ) -> Answer<pb::GetOffsetResponse> {
        client_id(&request)?;
        self.access.authorize(&request)?;
        Ok(Response::new(
            offsets::get_offset(&self.backend, request.into_inner()).await,
        ))
    }

    async fn query_offset(
        &self,
        request: Request<pb::QueryOffsetRequest>,
    ) -> Answer<pb::QueryOffsetResponse> {
        client_id(&request)?;
        self.access.authorize(&request)?;
        Ok(Response::new(
            offsets::query_offset(&self.backend, request.into_inner()).await,
        ))
    }

    async fn end_transaction(
        &self,
        request: Request<pb::EndTransactionRequest>,
    ) -> Answer<pb::EndTransactionResponse> {
        client_id(&request)?;
        self.access.authorize(&request)?;
        Ok(Response::new(
            transaction::end_transaction(&self.backend, request.into_inner()).await,
        ))
    }

    type TelemetryStream = ReceiverStream<telemetry::Outbound>;

    async fn telemetry(
        &self,
        request: Request<Streaming<pb::TelemetryCommand>>,
    ) -> Answer<Self::TelemetryStream> {
        let client = client_id(&request)?;
        self.access.authenticate(&request)?;
        let inbound = request.into_inner();
        let outbound = telemetry::open(Arc::clone(&self.backend), client, inbound);
        Ok(Response::new(ReceiverStream::new(outbound)))
    }

    async fn notify_client_termination(
        &self,
        request: Request<pb::NotifyClientTerminationRequest>,
    ) -> Answer<pb::NotifyClientTerminationResponse> {
        let client = client_id(&request)?;
        self.access.authorize(&request)?;
        self.backend.sessions.forget(&client);
        self.backend.lite.forget_client(&client);
        Ok(Response::new(pb::NotifyClientTerminationResponse {
            status: Some(ok()),
        }))
    }

    async fn change_invisible_duration(
        &self,
        request: Request<pb::ChangeInvisibleDurationRequest>,
    ) -> Answer<pb::ChangeInvisibleDurationResponse> {
        let client = client_id(&request)?;
        self.access.authorize(&request)?;
        let request = request.into_inner();
        Ok(Response::new(
            renew::calls::change_invisible(&self.backend, &self.renewals, &client, request).await,
        ))
    }

    async fn recall_message(
        &self,
        request: Request<pb::RecallMessageRequest>,
    ) -> Answer<pb::RecallMessageResponse> {
        client_id(&request)?;
        self.access.authorize(&request)?;
        let request = request.into_inner();
        Ok(Response::new(
            crate::recall::recall_message(&self.backend, request).await,
        ))
    }

    async fn sync_lite_subscription(
        &self,
        request: Request<pb::SyncLiteSubscriptionRequest>,
    ) -> Answer<pb::SyncLiteSubscriptionResponse> {
        let client = client_id(&request)?;
        self.access.authorize(&request)?;
        let request = request.into_inner();
        Ok(Response::new(
            crate::lite::calls::sync_lite_subscription(&self.backend, &client, &request).await,
        ))
    }
}
