//! ACL 2.0 for the v5 clients: a call's `authorization` metadata must sign
//! for an enabled user (`authenticationEnabled`), and the topics and groups
//! it names must be allowed by that user's ACL (`authorizationEnabled`).
//! The users and ACLs are the broker's: fetched with AUTH_LIST_USER and
//! AUTH_LIST_ACL (signed with the endpoint's own credentials, which must
//! be a super user's) at start and every few seconds, as Java's proxy reads
//! them from the broker through its caches. Until the first fetch succeeds
//! every call is refused.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use ferrocket_acl::auth::{auth_code, needs_from_v1, AclInfo, AuthFile, AuthMetadata, UserInfo};
use ferrocket_acl::{Denied, Perm};
use ferrocket_protocol::RemotingCommand;

use crate::backend::Backend;

mod settings;
pub use settings::AUTH_SETTINGS;

/// How often the users and ACLs are fetched again.
pub const REFRESH_INTERVAL_MS: u64 = 5_000;
/// Longest one fetch may take.
const FETCH_TIMEOUT_MS: u64 = 3_000;
/// The v5 request names the whitelists hold are `apache.rocketmq.v2.<Type>`.
const REQUEST_NAME_PREFIX: &str = "apache.rocketmq.v2.";

/// What the endpoint checks, and where the users come from.
#[derive(Debug, Clone, Default)]
pub struct AuthSettings {
    pub authentication: bool,
    pub authorization: bool,
    /// Request type names (`apache.rocketmq.v2.QueryRouteRequest`) that
    /// need no signature, or no ACL.
    pub authentication_whitelist: Vec<String>,
    pub authorization_whitelist: Vec<String>,
    /// The broker whose users count; `None`: the first master the name
    /// servers list.
    pub broker_addr: Option<String>,
}

/// The broker's users and ACLs, as last fetched.
pub struct BrokerUsers {
    pub settings: AuthSettings,
    current: RwLock<Option<Arc<AuthMetadata>>>,
}

impl BrokerUsers {
    pub fn new(settings: AuthSettings) -> BrokerUsers {
        BrokerUsers {
            settings,
            current: RwLock::new(None),
        }
    }

    fn current(&self) -> Option<Arc<AuthMetadata>> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether a call of type `T` with this metadata may do `needs`.
    pub fn check<T>(
        &self,
        authorization: Option<&str>,
        date_time: Option<&str>,
        peer: std::net::IpAddr,
        needs: &[(String, Perm)],
    ) -> Result<(), Denied> {
        let name = request_name::<T>();
        let settings = &self.settings;
        let authenticate =
            settings.authentication && !settings.authentication_whitelist.contains(&name);
        let authorize = settings.authorization && !settings.authorization_whitelist.contains(&name);
        if !authenticate && !authorize {
            return Ok(());
        }
        let meta = self.current().ok_or_else(|| {
            Denied("the users and ACLs are not loaded from the broker yet".into())
        })?;
        let mut username = authorization
            .and_then(|a| ferrocket_acl::parse_authorization(a).ok())
            .map(|c| c.access_key);
        if authenticate {
            username = Some(
                meta.authenticate_grpc(authorization, date_time)?
                    .username
                    .clone(),
            );
        }
        if authorize {
            meta.authorize(username.as_deref(), &needs_from_v1(needs), peer)?;
        }
        Ok(())
    }

    /// Fetches the users and ACLs now; the error says why not.
    pub async fn refresh(&self, backend: &Backend) -> Result<(), String> {
        let addr = match &self.settings.broker_addr {
            Some(addr) => addr.clone(),
            None => backend
                .first_master()
                .await
                .map_err(|s| s.message.clone())?,
        };
        let users: Vec<UserInfo> =
            fetch(backend, &addr, auth_code::AUTH_LIST_USER, "filter").await?;
        let acls: Vec<AclInfo> =
            fetch(backend, &addr, auth_code::AUTH_LIST_ACL, "subjectFilter").await?;
        let meta = AuthMetadata::from_file(&AuthFile { users, acls })?;
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(meta));
        Ok(())
    }
}

/// `apache.rocketmq.v2.<Type>` for a request type `T`.
fn request_name<T>() -> String {
    let full = std::any::type_name::<T>();
    let simple = full.rsplit("::").next().unwrap_or(full);
    format!("{REQUEST_NAME_PREFIX}{simple}")
}

async fn fetch<T: serde::de::DeserializeOwned>(
    backend: &Backend,
    addr: &str,
    code: i32,
    filter: &str,
) -> Result<Vec<T>, String> {
    let mut request = RemotingCommand::request(code);
    request.ext_fields.insert(filter, "");
    let timeout = Duration::from_millis(FETCH_TIMEOUT_MS);
    let response = backend
        .invoke(addr, request, timeout)
        .await
        .map_err(|s| format!("{addr}: {}", s.message))?;
    if response.code != ferrocket_protocol::codes::response_code::SUCCESS {
        let remark = response.remark.unwrap_or_default();
        return Err(format!("{addr} answered {}: {remark}", response.code));
    }
    if response.body.is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_slice(&response.body).map_err(|e| format!("{addr}: {e}"))
}

/// Fetches the users and ACLs every few seconds; a failure keeps the last
/// ones and is logged when it first happens and when it changes.
pub fn refresh_loop(users: Arc<BrokerUsers>, backend: Arc<Backend>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(REFRESH_INTERVAL_MS));
        let mut last_error: Option<String> = None;
        loop {
            tick.tick().await;
            match users.refresh(&backend).await {
                Ok(()) if last_error.take().is_some() => {
                    tracing::info!("ACL 2.0: the broker's users and ACLs are loaded again")
                }
                Ok(()) => {}
                Err(error) => {
                    if last_error.as_ref() != Some(&error) {
                        tracing::warn!(%error, "ACL 2.0: cannot fetch the broker's users and ACLs");
                    }
                    last_error = Some(error);
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn request_names_are_the_protobuf_ones() {
        assert_eq!(
            super::request_name::<crate::pb::QueryRouteRequest>(),
            "apache.rocketmq.v2.QueryRouteRequest"
        );
    }
}
