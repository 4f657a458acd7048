//! A connection that is plaintext or TLS, read and written the same way.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_lite::{AsyncRead, AsyncWrite};
use futures_rustls::{client, server};

/// A plaintext stream, or TLS over it as server or client.
pub enum MaybeTls<S> {
    Plain(S),
    Server(Box<server::TlsStream<S>>),
    Client(Box<client::TlsStream<S>>),
}

impl<S> MaybeTls<S> {
    pub fn is_tls(&self) -> bool {
        !matches!(self, MaybeTls::Plain(_))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for MaybeTls<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_read(cx, buf),
            MaybeTls::Server(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            MaybeTls::Client(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for MaybeTls<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_write(cx, buf),
            MaybeTls::Server(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            MaybeTls::Client(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    /// For TLS, pushes out the records still held after `poll_write`
    /// returned; call it after each batch written.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_flush(cx),
            MaybeTls::Server(s) => Pin::new(s.as_mut()).poll_flush(cx),
            MaybeTls::Client(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_close(cx),
            MaybeTls::Server(s) => Pin::new(s.as_mut()).poll_close(cx),
            MaybeTls::Client(s) => Pin::new(s.as_mut()).poll_close(cx),
        }
    }
}
