//! ACL 1.0 in front of every request (`aclEnable=true`): a request the
//! accounts do not allow is answered as Java's broker answers it,
//! SYSTEM_ERROR with the `AclException`'s text, and never reaches its
//! handler. Each shard keeps its own copy of the ACL in force and takes a
//! new one only when a reload moved the version.

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::Connection;

use crate::error::Reject;
use crate::shard::Shard;

/// Java's exception class, which its remark starts with.
const ACL_EXCEPTION: &str = "org.apache.rocketmq.acl.common.AclException";

/// The answer to a request the ACL refuses; `None` when it may go on (or
/// the ACL is off).
pub(crate) fn refusal(
    shard: &Shard,
    conn: &Connection,
    request: &RemotingCommand,
) -> Option<RemotingCommand> {
    let store = shard.env.acl.as_ref()?;
    let config = shard.acl.current(store);
    let denied = config.check(request, conn.peer_addr().ip()).err()?;
    let remark = format!("{ACL_EXCEPTION}: {}", denied.0);
    Some(Reject::new(response_code::SYSTEM_ERROR, remark).to_response(request))
}
