//! What the supervisor asks brokers over their own Remoting port: a
//! broker's CommitLog end (GET_BROKER_RUNTIME_INFO) and a master's epoch
//! list (GET_BROKER_EPOCH_CACHE); and this broker's epoch file.

use std::sync::OnceLock;
use std::time::Duration;

use ferrocket_broker::BrokerConfig;
use ferrocket_client::{ConnectionConfig, ConnectionPool};
use ferrocket_protocol::body::{decode_json, KvTable};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use ferrocket_store::epoch::file::EpochFile;
use ferrocket_store::epoch::{fork_point, EpochCache, EpochEntry, ForkPoint};
use serde::Deserialize;

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
pub(crate) fn connect_as(base: ConnectionConfig) {
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

/// The CommitLog end of the broker at `addr`, if it answers.
pub(crate) async fn max_offset(addr: &str) -> Option<i64> {
    let answer = ask(addr, request_code::GET_BROKER_RUNTIME_INFO).await?;
    let table: KvTable = decode_json(&answer.body).ok()?;
    table.table.get("commitLogMaxOffset")?.parse().ok()
}

/// Where the broker at `addr` takes HA links (`haServerAddr`, a key of
/// Ferrocket's runtime info), if it answers and says.
pub(crate) async fn ha_server_addr(addr: &str) -> Option<String> {
    let answer = ask(addr, request_code::GET_BROKER_RUNTIME_INFO).await?;
    let table: KvTable = decode_json(&answer.body).ok()?;
    table
        .table
        .get("haServerAddr")
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty())
}

/// A replica linked to a master by the AutoSwitch HA stream, as the
/// master's GET_BROKER_HA_STATUS lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Follower {
    pub broker_id: i64,
    /// Its CommitLog end, as it last reported (never before a report).
    pub acked: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HaConnection {
    #[serde(default = "no_id")]
    slave_broker_id: i64,
    #[serde(default)]
    slave_reported: bool,
    #[serde(default)]
    slave_ack_offset: i64,
}

fn no_id() -> i64 {
    -1
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HaRuntime {
    #[serde(default)]
    ha_connection_info: Vec<HaConnection>,
}

/// The replicas that follow the master at `addr` over its own HA links and
/// have reported where their log ends: the only ones whose copies are
/// known to be this master's bytes (a replica that forked from this
/// master's epochs is refused at the handshake, before it reports).
pub(crate) async fn followers(addr: &str) -> Option<Vec<Follower>> {
    let answer = ask(addr, request_code::GET_BROKER_HA_STATUS).await?;
    let runtime: HaRuntime = decode_json(&answer.body).ok()?;
    let followers = runtime
        .ha_connection_info
        .iter()
        .filter(|c| c.slave_broker_id > 0 && c.slave_reported)
        .map(|c| Follower {
            broker_id: c.slave_broker_id,
            acked: c.slave_ack_offset,
        })
        .collect();
    Some(followers)
}

fn epoch_file(config: &BrokerConfig) -> EpochFile {
    EpochFile::at(
        config
            .controller_mode
            .epoch_file(&config.store_path_root_dir),
    )
}

fn read_epochs(config: &BrokerConfig) -> EpochCache {
    epoch_file(config).read().unwrap_or_else(|e| {
        tracing::warn!("reading the epoch file: {e}");
        EpochCache::new()
    })
}

/// This broker's newest epoch (-1 when it has none), for heartbeats.
pub(crate) fn last_epoch(config: &BrokerConfig) -> i32 {
    read_epochs(config).last_epoch()
}

/// Where this broker's newest epoch starts, if it has one.
pub(crate) fn last_epoch_start(config: &BrokerConfig) -> Option<i64> {
    read_epochs(config).last().map(|e| e.start_offset)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EpochItem {
    epoch: i32,
    start_offset: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EpochEntryCache {
    #[serde(default)]
    epoch_list: Vec<EpochItem>,
    #[serde(default)]
    max_offset: i64,
}

impl EpochEntryCache {
    /// The entries that start at or before `upto`.
    fn entries(&self, upto: i64) -> Vec<EpochEntry> {
        self.epoch_list
            .iter()
            .filter(|item| item.start_offset <= upto)
            .map(|item| EpochEntry {
                epoch: item.epoch,
                start_offset: item.start_offset,
            })
            .collect()
    }
}

async fn master_epochs(master_addr: &str) -> Option<EpochEntryCache> {
    let answer = ask(master_addr, request_code::GET_BROKER_EPOCH_CACHE).await?;
    decode_json::<EpochEntryCache>(&answer.body).ok()
}

/// Where a log of this broker's epochs that ends at `own_end` agrees with
/// the master's at `master_addr` (the fork point of the two epoch lists),
/// and this broker's epochs; `None` while that cannot be told (the master
/// does not answer, or no epoch is shared).
async fn cut_to_follow(
    config: &BrokerConfig,
    master_addr: &str,
    own_end: i64,
) -> Result<Option<(i64, EpochCache)>, String> {
    let Some(master) = master_epochs(master_addr).await else {
        return Ok(None);
    };
    let master_cache = EpochCache::from_entries(&master.entries(i64::MAX))
        .map_err(|e| format!("the master's epoch list: {e}"))?;
    let local = read_epochs(config);
    let cut = match fork_point(&local, own_end, &master_cache, master.max_offset) {
        // Bytes without epochs (a slave that never mirrored them): copy
        // everything again rather than trust them.
        ForkPoint::NoLocalEpochs => 0,
        ForkPoint::At(point) => point,
        ForkPoint::NoCommonEpoch => {
            tracing::warn!(own_end, "no epoch shared with the master yet; waiting");
            return Ok(None);
        }
    };
    Ok(Some((cut, local)))
}

/// Whether the running broker at `own_addr` can follow `master_addr`
/// without cutting its log (its whole log agrees with the master's);
/// false when it cannot be told.
pub(crate) async fn follows_without_cut(
    config: &BrokerConfig,
    own_addr: &str,
    master_addr: &str,
) -> bool {
    let Some(own_end) = max_offset(own_addr).await else {
        return false;
    };
    match cut_to_follow(config, master_addr, own_end).await {
        Ok(Some((cut, _))) => cut >= own_end,
        Ok(None) => false,
        Err(e) => {
            tracing::warn!("comparing epochs with the new master: {e}");
            false
        }
    }
}

/// Before following `master_addr`: cut this broker's CommitLog back to
/// where it agrees with the master's (the fork point of the two epoch
/// lists), so that it copies only the master's bytes. `Ok(false)` when it
/// cannot tell yet (the master does not answer, or no epoch is shared:
/// Java retries too).
pub(crate) async fn prepare_to_follow(
    config: &BrokerConfig,
    master_addr: &str,
) -> Result<bool, String> {
    let store = config.store_config();
    let own_end = ferrocket_store::commitlog_end(&store)
        .map_err(|e| format!("reading the CommitLog: {e}"))?;
    let Some((cut, local)) = cut_to_follow(config, master_addr, own_end).await? else {
        return Ok(false);
    };
    if cut < own_end {
        tracing::warn!(
            own_end,
            cut,
            master = master_addr,
            "this log ran past the master's: cutting it back"
        );
        // The newest epoch of the bytes cut: the tier never takes copies
        // past the cut from a manifest of that epoch or older.
        ferrocket_store::truncate_commitlog(&store, cut, local.last_epoch())
            .map_err(|e| format!("cutting the CommitLog: {e}"))?;
        let mut kept = local;
        kept.truncate_from_offset(cut);
        epoch_file(config)
            .write(&kept)
            .map_err(|e| format!("writing the epoch file: {e}"))?;
    }
    Ok(true)
}
