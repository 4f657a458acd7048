//! What the supervisor asks other brokers over their Remoting port: where
//! a master takes HA links (GET_BROKER_RUNTIME_INFO's `haServerAddr`) and a
//! master's epoch list (GET_BROKER_EPOCH_CACHE). This broker's own state is
//! read in process (`role::progress`, the epoch file), never over its port.

use std::sync::OnceLock;
use std::time::Duration;

use ferrocket_client::{ConnectionConfig, ConnectionPool};
use ferrocket_protocol::body::{decode_json, EpochEntryCache, KvTable};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;

const CALL_TIMEOUT_MS: u64 = 1_000;

static POOL: OnceLock<ConnectionPool> = OnceLock::new();

fn new_pool(base: ConnectionConfig) -> ConnectionPool {
    let config = ConnectionConfig {
        connect_timeout_ms: CALL_TIMEOUT_MS,
        request_timeout_ms: CALL_TIMEOUT_MS,
        ..base
    };
    ConnectionPool::new(config, None)
}

/// How the calls here sign and dial (`innerClientAuthenticationCredentials`,
/// `useTLS`): brokers with `aclEnable=true` refuse unsigned ones. Set once,
/// before the first call.
pub(super) fn connect_as(base: ConnectionConfig) {
    let _ = POOL.set(new_pool(base));
}

fn pool() -> &'static ConnectionPool {
    POOL.get_or_init(|| new_pool(ConnectionConfig::default()))
}

async fn ask(addr: &str, code: i32) -> Option<RemotingCommand> {
    let request = RemotingCommand::request(code);
    let timeout = Duration::from_millis(CALL_TIMEOUT_MS);
    match pool().invoke_timeout(addr, request, timeout).await {
        Ok(answer) if answer.code == response_code::SUCCESS => Some(answer),
        Ok(answer) => {
            tracing::debug!(addr, code = answer.code, "broker refused");
            None
        }
        Err(e) => {
            pool().close(addr);
            tracing::debug!(addr, "broker unreachable: {e}");
            None
        }
    }
}

/// Where the broker at `addr` takes HA links (`haServerAddr`, a key of
/// Ferrocket's runtime info), if it answers and says.
pub(super) async fn ha_server_addr(addr: &str) -> Option<String> {
    let answer = ask(addr, request_code::GET_BROKER_RUNTIME_INFO).await?;
    let table: KvTable = decode_json(&answer.body).ok()?;
    table
        .table
        .get("haServerAddr")
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty())
}

/// The epoch list of the master at `master_addr`, if it answers.
pub(super) async fn master_epochs(master_addr: &str) -> Option<EpochEntryCache> {
    let answer = ask(master_addr, request_code::GET_BROKER_EPOCH_CACHE).await?;
    decode_json::<EpochEntryCache>(&answer.body).ok()
}
