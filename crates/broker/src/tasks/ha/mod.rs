//! The HA links of RocketMQ's classic master/slave replication
//! (`protocol::ha` has the byte layout), all on shard 0:
//! - `master`: the HA listener and, per slave, a task that pushes the
//!   CommitLog from the mapped segments and one that reads the slave's
//!   offset reports (SYNC_MASTER sends wait on those,
//!   `services::replication`).
//! - `slave`: the link to the master: report the CommitLog's end, take the
//!   master's bytes, cut them into whole records (`assemble`) and append
//!   them at the master's offsets (`ShardStore::replicate`); reconnects
//!   with back-off.
//! - `metadata`: a slave copies topics, groups, consumer and delay
//!   offsets from the master's broker port (`SlaveSynchronize`).

pub(crate) mod assemble;
pub(crate) mod master;
pub(crate) mod metadata;
pub(crate) mod slave;

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use futures_lite::{future, AsyncRead, AsyncWrite};
use glommio::net::TcpStream;

/// Longest a connect to the master may take.
pub const HA_CONNECT_TIMEOUT_MS: u64 = 3_000;

/// One HA TCP stream, read by one task and written by another (each
/// borrows it only inside a poll).
pub(crate) struct HaStream {
    stream: RefCell<TcpStream>,
}

impl HaStream {
    pub fn new(stream: TcpStream) -> Rc<Self> {
        // Frames are written whole; a heartbeat must not wait for more.
        let _ = stream.set_nodelay(true);
        Rc::new(Self {
            stream: RefCell::new(stream),
        })
    }

    pub async fn read_some(&self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| Pin::new(&mut *self.stream.borrow_mut()).poll_read(cx, buf)).await
    }

    pub async fn read_exact(&self, buf: &mut [u8]) -> io::Result<()> {
        let mut at = 0;
        while at < buf.len() {
            match self.read_some(&mut buf[at..]).await? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => at += n,
            }
        }
        Ok(())
    }

    pub async fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        let mut at = 0;
        while at < bytes.len() {
            let n =
                poll_fn(|cx| Pin::new(&mut *self.stream.borrow_mut()).poll_write(cx, &bytes[at..]))
                    .await?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            at += n;
        }
        Ok(())
    }
}

/// `work`, or a timeout error after `timeout_ms`.
pub(crate) async fn within<T>(
    timeout_ms: u64,
    what: &str,
    work: impl Future<Output = io::Result<T>>,
) -> io::Result<T> {
    let timeout = async {
        glommio::timer::sleep(Duration::from_millis(timeout_ms)).await;
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("{what}: nothing for {timeout_ms} ms"),
        ))
    };
    future::or(work, timeout).await
}
