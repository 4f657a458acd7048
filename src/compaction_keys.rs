//! Compaction topics' broker keys (Java's `MessageStoreConfig`):
//! `enableCompaction`, `compactionScheduleInternal` (ms between passes;
//! Java's spelling) and `maxOffsetMapSize` (bytes the key maps may count,
//! shared by the shards). Java's `compactionMappedFileSize`,
//! `compactionCqMappedFileSize` and `compactionThreadNum` are read and
//! have no effect (one compacted file a queue; passes run on blocking
//! threads, one shard's at a time).

use ferrocket_broker::BrokerConfig;

use crate::properties::{invalid, parse_bool, parse_value, Setting};

/// The keys taken here.
pub const KEYS: &[&str] = &[
    "enableCompaction",
    "compactionScheduleInternal",
    "maxOffsetMapSize",
    "compactionMappedFileSize",
    "compactionCqMappedFileSize",
    "compactionThreadNum",
];

pub fn broker_compaction_keys(
    config: &mut BrokerConfig,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    let compaction = &mut config.compaction;
    match key {
        "enableCompaction" => compaction.enabled = parse_bool(key, setting)?,
        "compactionScheduleInternal" => compaction.interval_ms = positive(key, setting)?,
        "maxOffsetMapSize" => compaction.max_offset_map_bytes = positive(key, setting)?,
        "compactionMappedFileSize" | "compactionCqMappedFileSize" | "compactionThreadNum" => {
            positive(key, setting)?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn positive(key: &str, setting: &Setting) -> Result<u64, String> {
    match parse_value::<u64>(key, setting)? {
        0 => Err(invalid(key, setting, "expected a whole number, 1 or more")),
        value => Ok(value),
    }
}
