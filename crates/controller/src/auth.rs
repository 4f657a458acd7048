//! Who may talk to the controller. With `aclEnable=true` every request,
//! reads and Raft messages included, needs a white-listed address or the
//! signature of an admin account of `{rocketmqHome}/conf/plain_acl.yml`
//! (the name server's rule for its writes; Java's controller checks
//! nothing). Brokers and peer controllers sign with
//! `innerClientAuthenticationCredentials`, `ferrocket admin` with its
//! `--access-key`. The `tls.*` keys put TLS on the port as on the name
//! server's, and make this controller's own calls dial TLS when
//! `tls.enable` (or an enforcing mode) says so.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use ferrocket_acl::AclStore;
use ferrocket_client::{ConnectionConfig, Credentials};
use ferrocket_protocol::RemotingCommand;
use ferrocket_tls::ServerTls;

use crate::config::{ConfigError, ControllerConfig};

/// The ACL files under the RocketMQ home, when `aclEnable=true`.
pub fn open_acl(config: &ControllerConfig) -> Result<Option<Arc<AclStore>>, ConfigError> {
    let store = (config.acl.open("every controller request")).map_err(ConfigError::Security)?;
    if store.is_some() && config.peers.len() > 1 && config.inner_credentials.is_none() {
        tracing::warn!(
            "aclEnable=true in a group of controllers without innerClientAuthenticationCredentials: \
             Raft between them goes unsigned and is refused unless their addresses are white-listed"
        );
    }
    Ok(store)
}

/// The answer to a request the ACL refuses; `None` to go on.
pub fn refusal(
    acl: Option<&AclStore>,
    request: &RemotingCommand,
    peer: IpAddr,
    stamp_window_ms: u64,
) -> Option<RemotingCommand> {
    ferrocket_acl::admin_refusal(&acl?.current(), request, peer, stamp_window_ms)
}

/// TLS on the controller's port, under `tls.server.mode`.
pub fn server_tls(config: &ControllerConfig) -> Result<Option<Arc<ServerTls>>, ConfigError> {
    ServerTls::new(&config.tls, &[]).map_err(|e| ConfigError::Security(format!("TLS: {e}")))
}

/// How this controller dials its peers and brokers: signed with its
/// `innerClientAuthenticationCredentials`, over TLS when the `tls.*` keys
/// say so.
pub fn outbound(
    config: &ControllerConfig,
    base: ConnectionConfig,
) -> Result<ConnectionConfig, ConfigError> {
    let tls = match config.tls.client_uses_tls(None) {
        false => None,
        true => {
            let merged = config.tls.with_file();
            let built = merged.and_then(|merged| ferrocket_tls::client_config(&merged, &[]));
            Some(built.map_err(|e| ConfigError::Security(format!("TLS (tls.enable): {e}")))?)
        }
    };
    let credentials = config.inner_credentials.clone().map(Credentials::from);
    Ok(ConnectionConfig {
        credentials,
        tls,
        ..base
    })
}

/// Reads the ACL files and TLS certificates again when they change, until
/// the task is aborted.
pub async fn reload_loop(acl: Option<Arc<AclStore>>, tls: Option<Arc<ServerTls>>) {
    let every = ferrocket_acl::RELOAD_INTERVAL_MS.min(ferrocket_tls::RELOAD_INTERVAL_MS);
    loop {
        tokio::time::sleep(Duration::from_millis(every)).await;
        if let Some(acl) = &acl {
            match acl.reload_if_changed() {
                Ok(true) => tracing::info!("controller: ACL files changed; reloaded"),
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(%error, "controller: ACL files changed but do not load; the old ACL stays")
                }
            }
        }
        if let Some(tls) = &tls {
            tls.reload_if_changed();
        }
    }
}
