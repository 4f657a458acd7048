//! Controller mode's epoch file, written by a master as it takes its role.

use crate::config::BrokerConfig;
use crate::error::BrokerError;

/// Controller mode: a run as the master of epoch E records (E, end of the
/// CommitLog) in the epoch file before anything is written, after dropping
/// entries of E or later and an entry that starts at this very end (its
/// epoch wrote nothing, so nothing can fork inside it).
pub(crate) fn record(config: &BrokerConfig, end: i64) -> Result<(), BrokerError> {
    let Some(epoch) = config.controller_mode.master_epoch else {
        return Ok(());
    };
    let file = config.epoch_file();
    let mut cache = file.read()?;
    cache.truncate_from_epoch(epoch);
    cache.truncate_from_offset(end);
    let entry = ferrocket_store::epoch::EpochEntry {
        epoch,
        start_offset: end,
    };
    cache
        .append(entry)
        .map_err(|e| BrokerError::Config(format!("epoch file: {e}")))?;
    file.write(&cache)?;
    tracing::info!(epoch, start_offset = end, "master epoch recorded");
    Ok(())
}
