//! The broker's store settings, each declared once (see `keys`).

use super::*;

pub(super) static STORE: &[Decl<BrokerConfig>] = &[
    decl!(
        "storePathRootDir",
        "`~/store`",
        start,
        "CommitLog, ConsumeQueues, config, checkpoint",
        |c, k, s| c.store_path_root_dir = non_empty(k, s)?.into(),
        |c| c.store_path_root_dir.display().to_string(),
    ),
    decl!(
        "storePathCommitLog",
        "",
        start,
        "taken as given: the CommitLog is always under storePathRootDir",
        |c, k, s| c.store_path_commit_log = Some(non_empty(k, s)?.into()),
    ),
    decl!(
        "storePathConsumeQueue",
        "",
        start,
        "taken as given: the ConsumeQueues are always under storePathRootDir",
        |c, k, s| c.store_path_consume_queue = Some(non_empty(k, s)?.into()),
    ),
    decl!(
        "enableProxy",
        "`false`",
        start,
        "serve RocketMQ 5 (gRPC) clients on the broker's own port too",
        |c, k, s| c.enable_proxy = parse_bool(k, s)?,
        |c| yes(c.enable_proxy),
    ),
    decl!(
        "proxyMode",
        "`local`",
        start,
        "how the in-broker gRPC endpoint reaches the broker: local or cluster",
        |c, k, s| c.proxy_mode =
            ProxyMode::parse(&s.value).ok_or_else(|| invalid(k, s, "expected local or cluster"))?,
        |c| c.proxy_mode.name().to_string(),
    ),
    decl!(
        "flushDiskType",
        "`ASYNC_FLUSH`",
        start,
        "SYNC_FLUSH acknowledges a send only after fdatasync (group commit)",
        |c, k, s| c.flush_disk_type = FlushDiskType::parse(&s.value).ok_or_else(|| invalid(
            k,
            s,
            "expected ASYNC_FLUSH or SYNC_FLUSH"
        ))?,
        |c| flush_name(c.flush_disk_type).to_string(),
    ),
    decl!(
        "flushIntervalCommitLog",
        "500",
        start,
        "ms between flushes under ASYNC_FLUSH",
        |c, k, s| c.flush_interval_commit_log_ms = positive(k, s)?,
        |c| c.flush_interval_commit_log_ms.to_string(),
    ),
    decl!(
        "syncFlushTimeout",
        "5000",
        start,
        "ms a SYNC_FLUSH send waits for its flush",
        |c, k, s| c.sync_flush_timeout_ms = positive(k, s)?,
        |c| c.sync_flush_timeout_ms.to_string(),
    ),
    decl!(
        "writeMode",
        "`buffered`",
        start,
        "buffered, or direct (O_DIRECT) CommitLog writes; Ferrocket key",
        |c, k, s| c.write_mode = CommitLogWriteMode::parse(&s.value).ok_or_else(|| invalid(
            k,
            s,
            "expected buffered or direct"
        ))?,
    ),
    decl!(
        "mappedFileSizeCommitLog",
        "1 GiB",
        start,
        "CommitLog segment size",
        |c, k, s| c.mapped_file_size_commit_log = positive(k, s)?,
        |c| c.mapped_file_size_commit_log.to_string(),
    ),
    decl!(
        "maxMessageSize",
        "4194304",
        online,
        "largest message body (for a batch, the whole body)",
        |c, k, s| c.max_message_size = parse_value(k, s)?,
        |c| c.max_message_size.to_string(),
    ),
    decl!(
        "flushConsumerOffsetInterval",
        "5000",
        start,
        "write consumer offsets and delay progress this often (ms)",
        |c, k, s| c.offset_persist_interval_ms = positive(k, s)?,
        |c| c.offset_persist_interval_ms.to_string(),
    ),
    decl!(
        "fileReservedTime",
        "72",
        start,
        "hours since a segment's last write before it may be deleted",
        |c, k, s| {
            let hours = positive(k, s)?;
            c.file_reserved_time_ms = hours
                .checked_mul(3_600_000)
                .ok_or_else(|| invalid(k, s, "expected hours, at most 2562047788015"))?
        },
        |c| (c.file_reserved_time_ms / 3_600_000).to_string(),
    ),
    decl!(
        "fileReservedTimeMs",
        "(from `fileReservedTime`)",
        start,
        "the same in milliseconds; Ferrocket extension, for tests",
        |c, k, s| c.file_reserved_time_ms = parse_value(k, s)?,
    ),
    decl!(
        "deleteWhen",
        "`04`",
        start,
        "local hours when expired segments are deleted, ;-separated (01;13)",
        |c, k, s| c.delete_when =
            BrokerConfig::parse_delete_when(&s.value).map_err(|why| invalid(k, s, &why))?,
        |c| c
            .delete_when
            .iter()
            .map(|h| format!("{h:02}"))
            .collect::<Vec<_>>()
            .join(";"),
    ),
    decl!(
        "diskMaxUsedSpaceRatio",
        "75",
        start,
        "percent of the disk in use above which expired segments go at any hour",
        |c, k, s| c.disk_max_used_space_ratio = percent(k, s)?,
        |c| c.disk_max_used_space_ratio.to_string(),
    ),
    decl!(
        "diskSpaceCleanForciblyRatio",
        "85",
        start,
        "percent above which the oldest segments go even when not expired",
        |c, k, s| c.disk_space_clean_forcibly_ratio = percent(k, s)?,
        |c| c.disk_space_clean_forcibly_ratio.to_string(),
    ),
    decl!(
        "diskSpaceWarningLevelRatio",
        "90",
        start,
        "percent (or 0.90) of the disk at which the broker stops taking writes",
        |c, k, s| c.disk_space_warning_level_ratio = ratio_percent(k, s)?,
        |c| c.disk_space_warning_level_ratio.to_string(),
    ),
    decl!(
        "cleanFileForciblyEnable",
        "`true`",
        start,
        "allow the forced deletion above diskSpaceCleanForciblyRatio",
        |c, k, s| c.clean_file_forcibly_enable = parse_bool(k, s)?,
        |c| yes(c.clean_file_forcibly_enable),
    ),
    decl!(
        "cleanResourceInterval",
        "10000",
        start,
        "ms between retention passes",
        |c, k, s| c.clean_resource_interval_ms = positive(k, s)?,
        |c| c.clean_resource_interval_ms.to_string(),
    ),
];
