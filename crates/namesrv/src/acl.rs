//! ACL 1.0 on the name server's write requests (`aclEnable=true`;
//! Ferrocket's own, Java's name server checks nothing): registering and
//! unregistering brokers, KV config changes, topic deletion and write
//! permission changes, and the heartbeats and data-version queries that
//! keep a broker's routes alive, need a white-listed address or a request
//! signed by an
//! admin account of `{rocketmqHome}/conf/plain_acl.yml`. Route and cluster
//! lookups stay open, as clients send them unsigned.

use std::net::IpAddr;

use ferrocket_acl::AclStore;
use ferrocket_protocol::codes::request_code::*;
use ferrocket_protocol::RemotingCommand;

/// REGISTER_TOPIC_IN_NAMESRV and UPDATE_NAMESRV_CONFIG.
const REGISTER_TOPIC_IN_NAMESRV: i32 = 217;
const UPDATE_NAMESRV_CONFIG: i32 = 318;

/// The requests that change the name server's state.
pub(crate) fn is_write(code: i32) -> bool {
    matches!(
        code,
        REGISTER_BROKER
            | UNREGISTER_BROKER
            // Both keep a broker's routes alive.
            | BROKER_HEARTBEAT
            | QUERY_DATA_VERSION
            | PUT_KV_CONFIG
            | DELETE_KV_CONFIG
            | DELETE_TOPIC_IN_NAMESRV
            | WIPE_WRITE_PERM_OF_BROKER
            | ADD_WRITE_PERM_OF_BROKER
            | REGISTER_TOPIC_IN_NAMESRV
            | UPDATE_NAMESRV_CONFIG
    )
}

/// The answer to a write request the ACL refuses; `None` to go on.
pub(crate) fn refusal(
    store: &AclStore,
    request: &RemotingCommand,
    peer: IpAddr,
    stamp_window_ms: u64,
) -> Option<RemotingCommand> {
    if !is_write(request.code) {
        return None;
    }
    ferrocket_acl::admin_refusal(&store.current(), request, peer, stamp_window_ms)
}

/// Reads the files again when they changed (the name server's loop).
pub(crate) fn reload(store: &AclStore) {
    match store.reload_if_changed() {
        Ok(true) => tracing::info!("ACL files changed; reloaded"),
        Ok(false) => {}
        Err(error) => {
            tracing::warn!(%error, "ACL files changed but do not load; the old ACL stays")
        }
    }
}
