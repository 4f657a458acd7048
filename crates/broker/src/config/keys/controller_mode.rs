//! Controller mode's keys (Java's `BrokerConfig`, `MessageStoreConfig`),
//! each declared once (see `keys`), into
//! the config's `ControllerModeConfig`.

use std::path::PathBuf;

use super::*;

/// A number above 0, as controller mode's keys word a refusal.
fn number(key: &str, setting: &Setting) -> Result<u64, String> {
    let value = setting.value.trim();
    value.parse::<u64>().ok().filter(|v| *v > 0).ok_or_else(|| {
        format!(
            "{}: {key}=`{value}`: expected a positive number",
            setting.origin
        )
    })
}

fn flag(key: &str, setting: &Setting) -> Result<bool, String> {
    let value = setting.value.trim();
    value.parse::<bool>().map_err(|_| {
        format!(
            "{}: {key}=`{value}`: expected true or false",
            setting.origin
        )
    })
}

fn path(setting: &Setting) -> Option<PathBuf> {
    let value = setting.value.trim();
    Some(PathBuf::from(value)).filter(|_| !value.is_empty())
}

fn priority(key: &str, setting: &Setting) -> Result<i32, String> {
    let value = setting.value.trim();
    value
        .parse()
        .map_err(|_| format!("{}: {key}=`{value}`: expected an integer", setting.origin))
}

fn replicas(key: &str, setting: &Setting) -> Result<u32, String> {
    let value = setting.value.trim();
    u32::try_from(number(key, setting)?)
        .map_err(|_| format!("{}: {key}=`{value}`: too large", setting.origin))
}

/// Controller addresses are listed, never looked up in DNS.
fn no_dns(key: &str, setting: &Setting) -> Result<(), String> {
    match flag(key, setting)? {
        true => Err(format!(
            "{}: {key}=true: DNS lookup of controllers is not supported; list them in controllerAddr",
            setting.origin
        )),
        false => Ok(()),
    }
}

pub(super) static CONTROLLER_MODE: &[Decl<BrokerConfig>] = &[
    decl!(
        "enableControllerMode",
        "`false`",
        start,
        "take id and role from the controller",
        |c, k, s| c.controller_mode.enabled = flag(k, s)?,
    ),
    decl!(
        "controllerAddr",
        "-",
        start,
        "`host:port;host:port`, every controller",
        |c, _, s| c.controller_mode.controller_addr = s.value.trim().to_string(),
    ),
    decl!(
        "syncBrokerMetadataPeriod",
        "5000",
        start,
        "ms between checks of who is master (at once on a notification)",
        |c, k, s| c.controller_mode.sync_broker_metadata_period_ms = number(k, s)?,
    ),
    decl!(
        "checkSyncStateSetPeriod",
        "5000",
        start,
        "ms between the master's checks of the in-sync set",
        |c, k, s| c.controller_mode.check_sync_state_set_period_ms = number(k, s)?,
    ),
    decl!(
        "syncControllerMetadataPeriod",
        "10000",
        start,
        "ms between looks for the controllers' leader",
        |c, k, s| c.controller_mode.sync_controller_metadata_period_ms = number(k, s)?,
    ),
    decl!(
        "controllerHeartBeatTimeoutMills",
        "10000",
        start,
        "ms without a heartbeat before the controller thinks the broker dead",
        |c, k, s| c.controller_mode.controller_heartbeat_timeout_ms = number(k, s)?,
    ),
    decl!(
        "brokerElectionPriority",
        "max",
        start,
        "lower wins among equally advanced replicas",
        |c, k, s| c.controller_mode.broker_election_priority = priority(k, s)?,
    ),
    decl!(
        "brokerHeartbeatInterval",
        "1000",
        start,
        "ms between heartbeats to every controller",
        |c, k, s| c.controller_mode.broker_heartbeat_interval_ms = number(k, s)?,
    ),
    decl!(
        "sendHeartbeatTimeoutMillis",
        "1000",
        start,
        "ms a heartbeat to a controller may take",
        |c, k, s| c.controller_mode.send_heartbeat_timeout_ms = number(k, s)?,
    ),
    decl!(
        "allAckInSyncStateSet",
        "`false`",
        start,
        "a send with WAIT=true waits for every in-sync replica",
        |c, k, s| c.controller_mode.all_ack_in_sync_state_set = flag(k, s)?,
    ),
    decl!(
        "minInSyncReplicas",
        "1",
        start,
        "fewer in-sync replicas refuse sends",
        |c, k, s| c.controller_mode.min_in_sync_replicas = replicas(k, s)?,
    ),
    decl!(
        "haMaxTimeSlaveNotCatchup",
        "15000",
        start,
        "ms a slave may lag before it leaves the in-sync set",
        |c, k, s| c.controller_mode.ha_max_time_slave_not_catchup_ms = number(k, s)?,
    ),
    decl!(
        "storePathEpochFile",
        "`{storePathRootDir}/epochFileCheckpoint`",
        start,
        "the epoch file (Java's format, with a `.bak`)",
        |c, _, s| c.controller_mode.store_path_epoch_file = path(s),
    ),
    decl!(
        "storePathBrokerIdentity",
        "`{storePathRootDir}/brokerIdentity`",
        start,
        "the file of the broker's id from the controller",
        |c, _, s| c.controller_mode.store_path_broker_identity = path(s),
    ),
    decl!(
        "fetchControllerAddrByDnsLookup",
        "`false`",
        start,
        "`true` is refused: list the controllers in controllerAddr",
        |_, k, s| no_dns(k, s)?,
    ),
];
