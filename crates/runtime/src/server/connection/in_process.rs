//! Connections with no socket: a front end inside the process (the
//! in-broker gRPC endpoint) hands requests to the handler itself and reads
//! what the server sends its client from the queue a writer would drain.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::rc::Rc;
use std::task::Poll;

use ferrocket_protocol::RemotingCommand;

use super::{next_conn_id, Connection, Phase};
use crate::server::ServerLimits;

impl Connection {
    /// A connection owned by the executor `shard_index` (its id names that
    /// shard, as an accepted connection's does) with no socket behind it.
    /// Requests the server sends it are read with [`Connection::next_sent`].
    pub fn in_process(shard_index: u16, peer_addr: SocketAddr, local_addr: SocketAddr) -> Rc<Self> {
        let id = next_conn_id(shard_index);
        Rc::new(Self::new(
            id,
            peer_addr,
            local_addr,
            ServerLimits::default(),
        ))
    }

    /// Waits until something is queued for the client, then takes all of it,
    /// decoded. Empty once the connection is closed.
    pub async fn next_sent(&self) -> Vec<RemotingCommand> {
        poll_fn(|cx| {
            let state = self.state.borrow();
            if state.phase == Phase::Closed || !state.out.is_empty() {
                return Poll::Ready(());
            }
            drop(state);
            self.set_writer_waker(cx);
            Poll::Pending
        })
        .await;
        self.take_sent()
    }
}
