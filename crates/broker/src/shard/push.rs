//! Requests the broker itself sends to a client (CHECK_TRANSACTION_STATE,
//! RESET_CONSUMER_CLIENT_OFFSET, ...): on the shard holding the
//! client's connection, reached from any shard.

use std::rc::Rc;

use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;

use super::Shard;
use crate::error::Reject;

/// Sends `command` oneway on connection `conn_id` of this shard.
fn send_oneway_here(shard: &Shard, conn_id: u64, command: RemotingCommand) -> Result<(), Reject> {
    let conn = shard
        .connection(conn_id)
        .ok_or_else(|| Reject::system(format!("connection {conn_id} is closed")))?;
    conn.send_oneway(command)
        .map_err(|err| Reject::system(format!("connection {conn_id}: {err}")))
}

/// Sends `command` oneway on connection `conn_id`, wherever it lives.
pub(crate) async fn send_oneway(
    shard: &Shard,
    conn_id: u64,
    command: RemotingCommand,
) -> Result<(), Reject> {
    let target = usize::from(ferrocket_runtime::server::shard_of_conn_id(conn_id));
    if target == shard.index {
        return send_oneway_here(shard, conn_id, command);
    }
    if target >= shard.count {
        return Err(Reject::system(format!("connection {conn_id} has no shard")));
    }
    shard.call(target, SendOneway { conn_id, command }).await?
}

/// On the connection's shard: send a oneway request on it.
struct SendOneway {
    conn_id: u64,
    command: RemotingCommand,
}

impl ShardCall<Shard> for SendOneway {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        send_oneway_here(&shard, self.conn_id, self.command)
    }
}
