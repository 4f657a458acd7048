//! The answer to a request the ACL refuses, as Java's servers give it:
//! SYSTEM_ERROR, the remark the `AclException`'s class and words.

use std::net::IpAddr;

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;

use crate::config::AclConfig;
use crate::validator::Denied;

/// Java's exception class, which its remark starts with.
pub const ACL_EXCEPTION: &str = "org.apache.rocketmq.acl.common.AclException";

/// The answer to `request` refused for `denied`.
pub fn refused(request: &RemotingCommand, denied: &Denied) -> RemotingCommand {
    let remark = format!("{ACL_EXCEPTION}: {}", denied.0);
    RemotingCommand::response_to(request, response_code::SYSTEM_ERROR, Some(remark))
}

/// For servers whose every guarded request is an administrator's (the name
/// server's writes, the controller): the refusal of `request` from `peer`
/// unless it comes from a white-listed address or is signed by an admin
/// account (with a fresh stamp of its code when `stamp_window_ms` is above
/// zero, see `crate::stamp`); `None` to go on.
pub fn admin_refusal(
    config: &AclConfig,
    request: &RemotingCommand,
    peer: IpAddr,
    stamp_window_ms: u64,
) -> Option<RemotingCommand> {
    let checked = config.check_admin(request, peer);
    let checked = checked.and_then(|()| config.check_admin_stamp(request, peer, stamp_window_ms));
    let denied = checked.err()?;
    crate::refusal_log::log_refusal(format_args!(
        "refused an unsigned or non-admin request: code {} from {peer}: {}",
        request.code, denied.0
    ));
    Some(refused(request, &denied))
}
