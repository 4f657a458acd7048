//! ACL 1.0 and 2.0 in front of every request. ACL 1.0 (`aclEnable=true`):
//! a request the accounts do not allow is answered as Java's broker
//! answers it, SYSTEM_ERROR with the `AclException`'s text. ACL 2.0
//! (`authenticationEnabled`, `authorizationEnabled`): a request not signed
//! by an enabled user, or one its user's ACL does not allow, is answered
//! NO_PERMISSION with Java's words. Either way it never reaches its
//! handler. Each shard keeps its own copy of the ACL and the users in
//! force and takes a new one only when a reload or a change moved the
//! version.

use std::net::IpAddr;

use ferrocket_acl::auth::{remoting_needs, AuthMetadata};
use ferrocket_acl::{Denied, ACCESS_KEY};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::Connection;

use crate::config::AuthConfig;

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
    let peer = conn.peer_addr().ip();
    if let Some(store) = shard.env().acl.as_ref() {
        let config = shard.acl().current(store.version(), || store.current());
        let window = shard.env().config.acl_admin_signature_window_ms;
        let checked = config.check(request, peer);
        let checked = checked.and_then(|()| config.check_admin_stamp(request, peer, window));
        if let Err(denied) = checked {
            let remark = format!("{ACL_EXCEPTION}: {}", denied.0);
            return Some(Reject::new(response_code::SYSTEM_ERROR, remark).to_response(request));
        }
    }
    let settings = &shard.env().config.auth;
    if !settings.enabled() {
        return None;
    }
    let meta = users(shard);
    let cluster = &shard.env().config.broker_cluster_name;
    let denied = check_v2(&meta, settings, cluster, request, peer).err()?;
    Some(Reject::new(response_code::NO_PERMISSION, denied.0).to_response(request))
}

/// Whether either ACL is on, so that a handler whose request names an
/// offset must read the record it reaches before acting on it.
pub(crate) fn stored_checks_on(shard: &Shard) -> bool {
    shard.env().acl.is_some() || shard.env().config.auth.authorization_enabled
}

/// After a handler has read a stored message of `topic` for `request` (a
/// request that names an offset or id, see `ferrocket_acl::stored`):
/// refused unless the caller may have it, in the words of the ACL that
/// refuses.
pub(crate) fn check_stored(
    shard: &Shard,
    conn: &Connection,
    request: &RemotingCommand,
    topic: &str,
) -> Result<(), Reject> {
    let peer = conn.peer_addr().ip();
    if let Some(store) = shard.env().acl.as_ref() {
        let config = shard.acl().current(store.version(), || store.current());
        if let Err(denied) = config.check_stored(request, peer, topic) {
            let remark = format!("{ACL_EXCEPTION}: {}", denied.0);
            return Err(Reject::new(response_code::SYSTEM_ERROR, remark));
        }
    }
    let settings = &shard.env().config.auth;
    if settings.authorization_enabled && !settings.authorization_whitelist.has_code(request.code) {
        let meta = users(shard);
        let username = request.ext_fields.get(ACCESS_KEY);
        ferrocket_acl::stored::check_stored_v2(&meta, username, request, peer, topic)
            .map_err(|denied| Reject::new(response_code::NO_PERMISSION, denied.0))?;
    }
    Ok(())
}

/// ACL 2.0: who signed `request` (with authentication on), then whether
/// that user may do what it asks (with authorization on; without
/// authentication the `AccessKey` names the user unchecked, as in Java).
fn check_v2(
    meta: &AuthMetadata,
    settings: &AuthConfig,
    cluster: &str,
    request: &RemotingCommand,
    peer: IpAddr,
) -> Result<(), Denied> {
    let mut username = request.ext_fields.get(ACCESS_KEY);
    if settings.authentication_enabled && !settings.authentication_whitelist.has_code(request.code)
    {
        username = Some(meta.authenticate(request)?.username.as_str());
    }
    if settings.authorization_enabled && !settings.authorization_whitelist.has_code(request.code) {
        let needs = remoting_needs(request, cluster).map_err(Denied)?;
        meta.authorize(username, &needs, peer)?;
    }
    Ok(())
}

/// This shard's copy of ACL 2.0's users and ACLs in force.
pub(crate) fn users(shard: &Shard) -> std::sync::Arc<AuthMetadata> {
    let store = &shard.env().auth;
    shard.auth().current(store.version(), || store.current())
}
