//! A tiny fake Remoting server: binds 127.0.0.1 on a port the OS picks,
//! speaks frames through the protocol codec, and is either scripted step by
//! step ([`FakeConn`]) or answers every request with a closure ([`serve`],
//! or [`serve_replies`] where an answer may come later).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::BytesMut;
use ferrocket_protocol::{FrameDecoder, RemotingCommand};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub struct FakeListener {
    listener: TcpListener,
    pub addr: String,
}

impl FakeListener {
    pub async fn bind() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        Self { listener, addr }
    }

    pub async fn accept(&self) -> FakeConn {
        let (stream, _) = self.listener.accept().await.unwrap();
        FakeConn::new(stream)
    }
}

/// One accepted connection, driven by the test.
pub struct FakeConn {
    stream: TcpStream,
    buf: BytesMut,
    decoder: FrameDecoder,
}

impl FakeConn {
    pub fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            buf: BytesMut::new(),
            decoder: FrameDecoder::default(),
        }
    }

    /// The next frame, or `None` when the client closed the connection.
    pub async fn recv(&mut self) -> Option<RemotingCommand> {
        loop {
            if let Some(command) = self.decoder.next_frame(&mut self.buf).unwrap() {
                return Some(command);
            }
            if self.stream.read_buf(&mut self.buf).await.unwrap_or(0) == 0 {
                return None;
            }
        }
    }

    pub async fn send(&mut self, command: &RemotingCommand) {
        self.try_send(command).await.unwrap();
    }

    /// Sends `command`; an error when the client has gone.
    pub async fn try_send(&mut self, command: &RemotingCommand) -> std::io::Result<()> {
        self.stream.write_all(&command.to_bytes()).await
    }
}

pub type Handler = Arc<dyn Fn(RemotingCommand) -> Option<RemotingCommand> + Send + Sync>;

/// An answer that comes once the future is done.
pub type Later = Pin<Box<dyn Future<Output = RemotingCommand> + Send>>;

/// How a [`serve_replies`] handler answers one request.
pub enum Reply {
    /// This response, now.
    Now(RemotingCommand),
    /// No answer (a oneway request).
    Silence,
    /// A response when it is ready (a long poll); the connection's later
    /// requests are answered meanwhile.
    Later(Later),
}

pub type ReplyHandler = Arc<dyn Fn(RemotingCommand) -> Reply + Send + Sync>;

/// A server answering every request of every connection with `handler`
/// (`None`: no answer). Stops when the returned handle is aborted/dropped
/// with the test's runtime.
pub struct FakeServer {
    pub addr: String,
    task: JoinHandle<()>,
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn serve(handler: Handler) -> FakeServer {
    serve_replies(Arc::new(move |request| match handler(request) {
        Some(response) => Reply::Now(response),
        None => Reply::Silence,
    }))
    .await
}

/// Like [`serve`], with answers that may come later.
pub async fn serve_replies(handler: ReplyHandler) -> FakeServer {
    let listener = FakeListener::bind().await;
    let addr = listener.addr.clone();
    let task = tokio::spawn(async move {
        loop {
            let conn = listener.accept().await;
            tokio::spawn(answer_requests(conn, handler.clone()));
        }
    });
    FakeServer { addr, task }
}

/// Answers one connection's requests in order, and later answers as they
/// become ready, until the client closes it.
async fn answer_requests(mut conn: FakeConn, handler: ReplyHandler) {
    let (ready_tx, mut ready) = mpsc::unbounded_channel::<RemotingCommand>();
    loop {
        let response = tokio::select! {
            request = conn.recv() => {
                let Some(request) = request else {
                    return;
                };
                match handler(request) {
                    Reply::Now(response) => response,
                    Reply::Silence => continue,
                    Reply::Later(answer) => {
                        let ready_tx = ready_tx.clone();
                        tokio::spawn(async move {
                            let _ = ready_tx.send(answer.await);
                        });
                        continue;
                    }
                }
            }
            Some(response) = ready.recv() => response,
        };
        if conn.try_send(&response).await.is_err() {
            return;
        }
    }
}

/// A success response to `request` with `body`.
pub fn ok_with_body(request: &RemotingCommand, body: impl Into<bytes::Bytes>) -> RemotingCommand {
    RemotingCommand::response_to(request, 0, None).with_body(body)
}
