//! The controller's settings, each declared once (see `ferrocket_settings`):
//! controller.conf (or the name server's file when embedded), `--set`,
//! "did you mean", `controller --help`, GET_CONTROLLER_CONFIG's lines,
//! which keys UPDATE_CONTROLLER_CONFIG may change and the README's key
//! table all read [`CONTROLLER_SETTINGS`]. `listenAddr` and `listenPort`
//! are the command line's: they only give a lone controller its peer
//! address.

use std::path::PathBuf;

use ferrocket_acl::{AdminAclSettings, ADMIN_ACL_SETTINGS};
use ferrocket_settings::{decl, invalid, parse_bool, parse_value, Decl, Setting, Table};

use crate::config::{parse_peers, peers_text, ControllerConfig};

/// Every key the controller takes.
pub static CONTROLLER_SETTINGS: Table<ControllerConfig> = Table {
    sections: &[GROUP, ELECTION, &ACL, SECURITY, NO_EFFECT, &TLS],
};

impl ControllerConfig {
    /// Applies one `key=value` setting (`origin`: where it came from, for
    /// its error); false when the key is not a controller key.
    pub fn apply(&mut self, key: &str, value: &str, origin: &str) -> Result<bool, String> {
        let setting = Setting::from_flag(value.to_string(), origin.into());
        CONTROLLER_SETTINGS.apply(self, key, &setting)
    }
}

/// The `tls.*` keys, declared in `ferrocket_tls`, on the controller's
/// `tls`.
static TLS: [Decl<ControllerConfig>; ferrocket_tls::TLS_SETTINGS.len()] = ferrocket_settings::nested!(
    ControllerConfig, tls: ferrocket_tls::TlsSettings = ferrocket_tls::TLS_SETTINGS
);

/// ACL 1.0, as the name server's: its keys (`aclEnable`,
/// `aclAdminSignatureWindowMs`, `rocketmqHome`), declared in
/// `ferrocket_acl`, on the controller's `acl` (not printed by
/// GET_CONTROLLER_CONFIG).
static ACL: [Decl<ControllerConfig>; ADMIN_ACL_SETTINGS.len()] = ferrocket_settings::nested!(
    ControllerConfig, acl: AdminAclSettings = ADMIN_ACL_SETTINGS
);

/// The Raft group: who its members are, where this one keeps its log.
static GROUP: &[Decl<ControllerConfig>] = &[
    decl!(
        "controllerDLegerGroup",
        "`DefaultControllerGroup`",
        start,
        "the group's name",
        |c, _, s| c.group = s.value.trim().to_string(),
        |c| c.group.clone(),
    ),
    decl!(
        "controllerDLegerPeers",
        "`n0-127.0.0.1:19876`",
        start,
        "`id-host:port;...`, every controller of the group (without it: one on listenAddr:listenPort)",
        |c, _, s| c.peers = parse_peers(&s.value).map_err(|e| format!("{}: {e}", s.origin))?,
        |c| peers_text(&c.peers),
    ),
    decl!(
        "controllerDLegerSelfId",
        "`n0`",
        start,
        "which peer this one is",
        |c, _, s| c.self_id = s.value.trim().to_string(),
        |c| c.self_id.clone(),
    ),
    decl!(
        "controllerStorePath",
        "`~/DLedgerController`",
        start,
        "the Raft log, vote and snapshot",
        |c, _, s| c.store_path = PathBuf::from(s.value.trim()),
        |c| c.store_path.display().to_string(),
    ),
];

/// Scans, elections and Raft's timing.
static ELECTION: &[Decl<ControllerConfig>] = &[
    decl!(
        "scanNotActiveBrokerInterval",
        "5000",
        start,
        "ms between drops of silent brokers",
        |c, k, s| c.scan_not_active_broker_interval_ms = parse_value(k, s)?,
        |c| c.scan_not_active_broker_interval_ms.to_string(),
    ),
    decl!(
        "scanInactiveMasterInterval",
        "5000",
        start,
        "ms between the leader's looks for sets whose master is dead",
        |c, k, s| c.scan_inactive_master_interval_ms = parse_value(k, s)?,
        |c| c.scan_inactive_master_interval_ms.to_string(),
    ),
    decl!(
        "enableElectUncleanMaster",
        "`false`",
        online,
        "elect outside the in-sync set when no in-sync replica lives (loses acknowledged messages)",
        |c, k, s| c.enable_elect_unclean_master = parse_bool(k, s)?,
        |c| c.enable_elect_unclean_master.to_string(),
    ),
    decl!(
        "notifyBrokerRoleChanged",
        "`true`",
        online,
        "tell a set's brokers of a new master at once (NOTIFY_BROKER_ROLE_CHANGED)",
        |c, k, s| c.notify_broker_role_changed = parse_bool(k, s)?,
        |c| c.notify_broker_role_changed.to_string(),
    ),
    decl!(
        "electMasterMaxRetryCount",
        "3",
        online,
        "tries of an election the controller starts",
        |c, k, s| c.elect_master_max_retry_count = parse_value(k, s)?,
        |c| c.elect_master_max_retry_count.to_string(),
    ),
    decl!(
        "jRaftElectionTimeoutMs" | "controllerElectionTimeoutMs",
        "1000",
        start,
        "Raft election timeout, ms (heartbeats every fifth of it)",
        |c, k, s| c.election_timeout_ms = parse_value(k, s)?,
        |c| c.election_timeout_ms.to_string(),
    ),
    decl!(
        "controllerSnapshotLogs",
        "1000",
        start,
        "a Raft snapshot after this many log entries (Ferrocket key)",
        |c, k, s| c.snapshot_logs = parse_value(k, s)?,
        |c| c.snapshot_logs.to_string(),
    ),
];

/// What this controller signs its own requests with.
static SECURITY: &[Decl<ControllerConfig>] = &[decl!(
    "innerClientAuthenticationCredentials",
    "",
    start,
    r#"{"accessKey":..,"secretKey":..} this controller signs its own requests with"#,
    |c, k, s| c.inner_credentials = credentials(k, s)?
)];

/// Java keys with no meaning here: the Raft library is ours.
static NO_EFFECT: &[Decl<ControllerConfig>] = &[
    decl!(
        "controllerType",
        "",
        start,
        "no effect (Java's Raft library)",
        |_, _, _| {}
    ),
    decl!(
        "isProcessReadEvent",
        "",
        start,
        "no effect (Java's DLedger reads)",
        |_, _, _| {}
    ),
    decl!(
        "mappedFileSize",
        "",
        start,
        "no effect (Java's DLedger log files)",
        |_, _, _| {}
    ),
];

/// `{"accessKey":"...","secretKey":"..."}`; empty: none. The error does
/// not repeat the value, which holds a secret.
fn credentials(key: &str, setting: &Setting) -> Result<Option<(String, String)>, String> {
    if setting.value.trim().is_empty() {
        return Ok(None);
    }
    let refused = || {
        let hidden = Setting::from_flag("***".into(), setting.origin.clone());
        invalid(
            key,
            &hidden,
            r#"expected {"accessKey":"...","secretKey":"..."}"#,
        )
    };
    let json: serde_json::Value = serde_json::from_str(&setting.value).map_err(|_| refused())?;
    match (json["accessKey"].as_str(), json["secretKey"].as_str()) {
        (Some(access), Some(secret)) if !access.is_empty() && !secret.is_empty() => {
            Ok(Some((access.to_string(), secret.to_string())))
        }
        _ => Err(refused()),
    }
}

#[cfg(test)]
mod tests;
