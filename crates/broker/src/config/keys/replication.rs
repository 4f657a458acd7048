//! The broker's replication settings, each declared once (see `keys`).

use super::*;

pub(super) static REPLICATION: &[Decl<BrokerConfig>] = &[
    decl!(
        "brokerRole",
        "`ASYNC_MASTER`",
        start,
        "ASYNC_MASTER, SYNC_MASTER or SLAVE; a master must have brokerId=0, a slave brokerId > 0",
        |c, k, s| c.replication.broker_role = BrokerRole::parse(&s.value)
            .ok_or_else(|| { invalid(k, s, "expected ASYNC_MASTER, SYNC_MASTER or SLAVE") })?,
        |c| c.replication.broker_role.name().to_string(),
    ),
    decl!(
        "haListenPort",
        "`listenPort + 1`",
        start,
        "where a master accepts slaves (a value <= 0 means the default)",
        |c, k, s| {
            let port: i64 = parse_value(k, s)?;
            c.replication.ha_listen_port = match port {
                ..=0 => None,
                1..=65535 => Some(port as u16),
                _ => {
                    return Err(invalid(
                        k,
                        s,
                        "expected a port, 1-65535, or 0 for listenPort + 1",
                    ))
                }
            }
        },
        |c| c
            .replication
            .ha_port(c.listen_port)
            .map_or(String::new(), |p| p.to_string()),
    ),
    decl!(
        "haMasterAddress",
        "learnt",
        start,
        "a slave's master HA address host:port; unset: learnt from the name server",
        |c, _, s| c.replication.ha_master_address = s.value.trim().to_owned(),
        |c| c.replication.ha_master_address.clone(),
    ),
    decl!(
        "brokerIP2",
        "`brokerIP1`",
        start,
        "host of the HA address a master announces",
        |c, _, s| c.replication.broker_ip2 = s.value.trim().to_owned(),
        |c| c.replication.broker_ip2.clone(),
    ),
    decl!(
        "haSendHeartbeatInterval",
        "5000",
        start,
        "ms between a slave's reports to its master",
        |c, k, s| c.replication.ha_heartbeat_interval_ms = positive(k, s)?,
    ),
    decl!(
        "haHousekeepingInterval",
        "20000",
        start,
        "ms an HA link may stay silent before it is dropped",
        |c, k, s| c.replication.ha_housekeeping_interval_ms = positive(k, s)?,
    ),
    decl!(
        "haTransferBatchSize",
        "32 KiB",
        start,
        "most bytes per HA frame",
        |c, k, s| c.replication.ha_transfer_batch_bytes = positive_count(k, s)?,
    ),
    decl!(
        "haMaxGapNotInSync" | "haSlaveFallbehindMax",
        "256 MiB",
        start,
        "bytes behind beyond which a slave does not count as in sync",
        |c, k, s| c.replication.ha_max_gap_not_in_sync_bytes = positive(k, s)? as i64,
    ),
    decl!(
        "slaveTimeout",
        "3000",
        start,
        "ms a SYNC_MASTER send waits for its slaves",
        |c, k, s| c.replication.slave_timeout_ms = positive(k, s)?,
    ),
    decl!(
        "inSyncReplicas",
        "1",
        start,
        "copies (the master's included) a SYNC_MASTER send waits for",
        |c, k, s| c.replication.in_sync_replicas = parse_value(k, s)?,
        |c| c.replication.in_sync_replicas.to_string(),
    ),
    decl!(
        "haFlowControlEnable",
        "`false`",
        start,
        "cap the bytes per second sent to each slave",
        |c, k, s| c.replication.ha_flow_control_enable = parse_bool(k, s)?,
    ),
    decl!(
        "maxHaTransferByteInSecond",
        "100 MiB",
        start,
        "bytes per second to each slave, with flow control on",
        |c, k, s| c.replication.ha_transfer_bytes_per_sec_max = positive(k, s)?,
    ),
    decl!(
        "slaveReadEnable",
        "`false`",
        start,
        "a slave answers pulls (without it, SYSTEM_BUSY)",
        |c, k, s| c.replication.slave_read_enable = parse_bool(k, s)?,
        |c| yes(c.replication.slave_read_enable),
    ),
    decl!(
        "accessMessageInMemoryMaxRatio",
        "40",
        start,
        "a pull this far (percent of physical memory) behind the CommitLog's end is \"slow\"",
        |c, k, s| c.replication.access_message_in_memory_max_ratio = parse_value(k, s)?,
    ),
    decl!(
        "haTlsEnable",
        "`false`",
        start,
        "the HA stream over TLS (Ferrocket key)",
        |c, k, s| c.replication.ha_tls_enable = parse_bool(k, s)?,
    ),
    decl!(
        "haAuthSecret",
        "empty",
        start,
        "shared secret a slave proves with HMAC-SHA1 before the master streams (Ferrocket key)",
        |c, _, s| c.replication.ha_auth_secret = s.value.trim().to_owned(),
    ),
    decl!(
        "enableSlaveActingMaster",
        "`false`",
        start,
        "while the set has no master, its lowest-id slave acts as master",
        |c, k, s| c.replication.enable_slave_acting_master = parse_bool(k, s)?,
    ),
    decl!(
        "enableRemoteEscape",
        "`false`",
        start,
        "an acting master sends what its services deliver to another set's master",
        |c, k, s| c.replication.enable_remote_escape = parse_bool(k, s)?,
    ),
    decl!(
        "brokerNotActiveTimeoutMillis",
        "10000",
        start,
        "with enableSlaveActingMaster, the expiry announced to name servers (ms)",
        |c, k, s| c.replication.broker_not_active_timeout_ms = positive(k, s)?,
    ),
    decl!(
        "syncBrokerMemberGroupPeriod",
        "1000",
        start,
        "how often such a slave asks the name server for its set's members",
        |c, k, s| c.replication.sync_broker_member_group_period_ms = positive(k, s)?,
    ),
];
