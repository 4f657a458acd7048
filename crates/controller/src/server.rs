//! The controller's Remoting server on tokio: one task reads each
//! connection's frames, each request is handled in its own task (a write
//! waits for a Raft commit, and must not hold up heartbeats behind it), and
//! one task per connection writes the answers.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use ferrocket_protocol::limits::FRAME_BYTES_MAX;
use ferrocket_protocol::{FrameDecoder, RemotingCommand};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};

/// Connections served at once; more are closed on accept.
pub const CONNECTIONS_MAX: usize = 4_096;
/// Requests of one connection in flight at once; the reader waits beyond.
pub const IN_FLIGHT_PER_CONNECTION_MAX: usize = 256;
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// What the server calls: the controller.
pub trait Service: Send + Sync + 'static {
    /// Answers one request; `None` sends nothing.
    fn handle(
        self: &Arc<Self>,
        request: RemotingCommand,
        connection: u64,
    ) -> impl Future<Output = Option<RemotingCommand>> + Send;
    /// A connection closed.
    fn closed(self: &Arc<Self>, connection: u64);
}

/// Accepts connections until the task is dropped or aborted.
pub async fn serve<S: Service>(listener: TcpListener, service: Arc<S>) {
    let connections = Arc::new(Semaphore::new(CONNECTIONS_MAX));
    let next_id = AtomicU64::new(1);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("controller: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            tracing::warn!("controller: refusing {peer}: {CONNECTIONS_MAX} connections open");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let service = service.clone();
        tokio::spawn(async move {
            connection(stream, id, service.clone()).await;
            service.closed(id);
            drop(permit);
        });
    }
}

async fn connection<S: Service>(stream: TcpStream, id: u64, service: Arc<S>) {
    let (mut reader, mut writer) = stream.into_split();
    let (answers, mut queue) = mpsc::channel::<RemotingCommand>(IN_FLIGHT_PER_CONNECTION_MAX);
    let write_task = tokio::spawn(async move {
        let mut buf = BytesMut::new();
        while let Some(answer) = queue.recv().await {
            buf.clear();
            answer.encode(&mut buf);
            while let Ok(more) = queue.try_recv() {
                more.encode(&mut buf);
            }
            if writer.write_all(&buf).await.is_err() {
                break;
            }
        }
    });
    let in_flight = Arc::new(Semaphore::new(IN_FLIGHT_PER_CONNECTION_MAX));
    let decoder = FrameDecoder::new(FRAME_BYTES_MAX);
    let mut buf = BytesMut::with_capacity(READ_CHUNK_BYTES);
    'read: loop {
        buf.reserve(READ_CHUNK_BYTES);
        match reader.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        loop {
            let request = match decoder.next_frame(&mut buf) {
                Ok(Some(request)) => request,
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!("controller: dropping connection {id}: {e}");
                    break 'read;
                }
            };
            if request.is_response() {
                continue;
            }
            let Ok(permit) = in_flight.clone().acquire_owned().await else {
                break 'read;
            };
            let service = service.clone();
            let answers = answers.clone();
            tokio::spawn(async move {
                let oneway = request.is_oneway();
                let answer = service.handle(request, id).await;
                if let Some(answer) = answer.filter(|_| !oneway) {
                    let _ = answers.send(answer).await;
                }
                drop(permit);
            });
        }
    }
    drop(answers);
    write_task.abort();
}
