//! A tiny fake Remoting server for the client's tests: binds 127.0.0.1 on a
//! port the OS picks, speaks frames through the protocol codec, and is
//! either scripted step by step ([`FakeConn`]) or answers every request
//! with a closure ([`serve`]).

#![allow(dead_code)]

pub mod broker;

use std::sync::Arc;

use bytes::BytesMut;
use ferrocket_protocol::{FrameDecoder, RemotingCommand};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
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
        self.stream.write_all(&command.to_bytes()).await.unwrap();
    }
}

pub type Handler = Arc<dyn Fn(RemotingCommand) -> Option<RemotingCommand> + Send + Sync>;

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
    let listener = FakeListener::bind().await;
    let addr = listener.addr.clone();
    let task = tokio::spawn(async move {
        loop {
            let mut conn = listener.accept().await;
            let handler = handler.clone();
            tokio::spawn(async move {
                while let Some(request) = conn.recv().await {
                    if let Some(response) = handler(request) {
                        conn.send(&response).await;
                    }
                }
            });
        }
    });
    FakeServer { addr, task }
}

/// A success response to `request` with `body`.
pub fn ok_with_body(request: &RemotingCommand, body: impl Into<bytes::Bytes>) -> RemotingCommand {
    RemotingCommand::response_to(request, 0, None).with_body(body)
}
