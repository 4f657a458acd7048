//! Compaction topics' keys (Java's `MessageStoreConfig`). Java's
//! `compactionMappedFileSize`, `compactionCqMappedFileSize` and
//! `compactionThreadNum` are read and have no effect (one compacted file a
//! queue; passes run on blocking threads, one shard's at a time).

use super::*;

pub(super) static COMPACTION: &[Decl<BrokerConfig>] = &[
    decl!(
        "enableCompaction",
        "`true`",
        start,
        "run compaction passes over compaction topics",
        |c, k, s| c.compaction.enabled = parse_bool(k, s)?
    ),
    decl!(
        "compactionScheduleInternal",
        "900000",
        start,
        "ms between compaction passes (Java's spelling)",
        |c, k, s| c.compaction.interval_ms = positive(k, s)?
    ),
    decl!(
        "maxOffsetMapSize",
        "104857600",
        start,
        "bytes the compaction key maps may count, shared by the shards",
        |c, k, s| c.compaction.max_offset_map_bytes = positive(k, s)?
    ),
    decl!(
        "compactionMappedFileSize",
        "",
        start,
        "no effect (one compacted file a queue)",
        |_, k, s| positive(k, s)?
    ),
    decl!(
        "compactionCqMappedFileSize",
        "",
        start,
        "no effect (one compacted file a queue)",
        |_, k, s| positive(k, s)?
    ),
    decl!(
        "compactionThreadNum",
        "",
        start,
        "no effect (passes run on blocking threads, one shard's at a time)",
        |_, k, s| positive(k, s)?
    ),
];
