//! This broker's epoch file, and a follower's cut of its CommitLog back to
//! where it agrees with the master it is about to follow (the fork point
//! of the two epoch lists), so that it copies only the master's bytes.

use ferrocket_protocol::body::EpochEntryCache;
use ferrocket_store::epoch::file::EpochFile;
use ferrocket_store::epoch::{fork_point, EpochCache, EpochEntry, ForkPoint};

use super::peers;
use crate::config::BrokerConfig;

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
pub(super) fn last_epoch(config: &BrokerConfig) -> i32 {
    read_epochs(config).last_epoch()
}

/// Where this broker's newest epoch starts, if it has one.
pub(super) fn last_epoch_start(config: &BrokerConfig) -> Option<i64> {
    read_epochs(config).last().map(|e| e.start_offset)
}

/// The master's entries that start at or before `upto`.
fn entries(master: &EpochEntryCache, upto: i64) -> Vec<EpochEntry> {
    master
        .epoch_list
        .iter()
        .filter(|item| item.start_offset <= upto)
        .map(|item| EpochEntry {
            epoch: item.epoch,
            start_offset: item.start_offset,
        })
        .collect()
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
    let Some(master) = peers::master_epochs(master_addr).await else {
        return Ok(None);
    };
    let master_cache = EpochCache::from_entries(&entries(&master, i64::MAX))
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

/// Whether the running broker, whose CommitLog ends at `own_end` (`None`:
/// not known), can follow `master_addr` without cutting its log (its whole
/// log agrees with the master's); false when it cannot be told.
pub(super) async fn follows_without_cut(
    config: &BrokerConfig,
    own_end: Option<i64>,
    master_addr: &str,
) -> bool {
    let Some(own_end) = own_end else {
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

/// Before following `master_addr`, with the store closed: cut this
/// broker's CommitLog back to where it agrees with the master's.
/// `Ok(false)` when it cannot tell yet (the master does not answer, or no
/// epoch is shared: Java retries too).
pub(super) async fn prepare_to_follow(
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
        ferrocket_store::truncate_commitlog(&store, cut)
            .map_err(|e| format!("cutting the CommitLog: {e}"))?;
        let mut kept = local;
        kept.truncate_from_offset(cut);
        epoch_file(config)
            .write(&kept)
            .map_err(|e| format!("writing the epoch file: {e}"))?;
    }
    Ok(true)
}
