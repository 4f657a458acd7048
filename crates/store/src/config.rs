//! Store configuration: where files live, segment sizes, write and flush
//! modes, and the limits of the shard -> appender rings.

use std::path::PathBuf;

use crate::error::StoreError;

/// Default CommitLog segment size (`mappedFileSizeCommitLog`): 1 GiB.
pub const SEGMENT_BYTES_DEFAULT: u64 = 1 << 30;
/// Smallest segment accepted (tests use tiny segments to force rolls).
pub const SEGMENT_BYTES_MIN: u64 = 4096;
/// Default ConsumeQueue entries per file (`mappedFileSizeConsumeQueue / 20`).
pub const CQ_ENTRIES_PER_FILE_DEFAULT: u64 = 300_000;
/// Default request ring capacity per shard (records in flight per shard).
pub const RING_CAPACITY_DEFAULT: usize = 1024;
/// Default bytes the appender gathers into one write.
pub const BATCH_BYTES_MAX_DEFAULT: usize = 4 << 20;
/// Default async flush interval (`flushIntervalCommitLog`).
pub const FLUSH_INTERVAL_MS_DEFAULT: u64 = 500;
/// Default sync flush timeout (`syncFlushTimeout`).
pub const SYNC_FLUSH_TIMEOUT_MS_DEFAULT: u64 = 5_000;
/// Default interval between checkpoint writes.
pub const CHECKPOINT_INTERVAL_MS_DEFAULT: u64 = 1_000;
/// Default interval between ConsumeQueue flushes on each shard.
pub const CQ_FLUSH_INTERVAL_MS_DEFAULT: u64 = 1_000;
/// Default bytes of recently written CommitLog kept in memory in Direct mode.
pub const HOT_TAIL_BYTES_DEFAULT: usize = 64 << 20;

// Segments are whole pages (O_DIRECT writes and mmaps need it), and one
// appender write or the Direct mode's hot tail fits in a default segment.
const _: () = assert!(SEGMENT_BYTES_MIN % 4096 == 0);
const _: () = assert!(SEGMENT_BYTES_DEFAULT % SEGMENT_BYTES_MIN == 0);
const _: () = assert!(BATCH_BYTES_MAX_DEFAULT as u64 <= SEGMENT_BYTES_DEFAULT);
const _: () = assert!(HOT_TAIL_BYTES_DEFAULT as u64 <= SEGMENT_BYTES_DEFAULT);
const _: () = assert!(RING_CAPACITY_DEFAULT > 0 && CQ_ENTRIES_PER_FILE_DEFAULT > 0);

/// How the appender writes CommitLog segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// O_DIRECT: aligned writes that bypass the page cache. The partly filled
    /// last block is kept in memory and rewritten with the next batch; the
    /// most recent batches stay readable from memory (the hot tail).
    Direct,
    /// Ordinary writes through the page cache; reads hit the same pages.
    Buffered,
}

/// When written CommitLog data is made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushMode {
    /// A background fdatasync every `interval_ms`; appends are acknowledged
    /// once written (`ASYNC_FLUSH`).
    Async { interval_ms: u64 },
    /// Appends are acknowledged after the fdatasync that covers them (group
    /// commit: one fdatasync per batch). A flush slower than `timeout_ms` is
    /// answered with [`crate::AppendStatus::FlushDiskTimeout`] (`SYNC_FLUSH`).
    Sync { timeout_ms: u64 },
}

/// Everything the store needs to open.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Root directory: holds `commitlog/`, `consumequeue/`, `config/` and
    /// `checkpoint` (`storePathRootDir`).
    pub root_dir: PathBuf,
    /// CommitLog segment size in bytes (`mappedFileSizeCommitLog`).
    pub segment_bytes: u64,
    pub write_mode: WriteMode,
    pub flush_mode: FlushMode,
    /// Capacity of each shard's request ring and result ring, in messages.
    pub ring_capacity: usize,
    /// Bytes the appender gathers into one batch before writing it.
    pub batch_bytes_max: usize,
    /// ConsumeQueue entries per file.
    pub cq_entries_per_file: u64,
    /// How often the appender writes the checkpoint file.
    pub checkpoint_interval_ms: u64,
    /// How often each shard flushes its dirty ConsumeQueue files.
    pub cq_flush_interval_ms: u64,
    /// Direct mode: recently written bytes kept in memory for readers.
    pub hot_tail_bytes: usize,
    /// When old CommitLog segments and ConsumeQueue files are deleted.
    pub retention: crate::retention::RetentionConfig,
    /// A slave's store (`brokerRole=SLAVE`): its CommitLog takes only the
    /// master's bytes ([`ShardStore::replicate`](crate::ShardStore::replicate));
    /// appends are refused.
    pub replica: bool,
    /// A shard told after every written batch, even one that carries
    /// nothing for it (a master's HA links push new bytes from there; see
    /// [`ShardStore::set_written_listener`](crate::ShardStore::set_written_listener)).
    pub notify_written_shard: Option<usize>,
    /// Controller mode: each shard's dispatch gate starts closed at the
    /// recovered CommitLog end, and the broker moves it to the confirm
    /// offset ([`ShardStore::set_dispatch_gate`](crate::ShardStore::set_dispatch_gate)).
    pub dispatch_gated: bool,
    /// The delay of each delay level (index = SCHEDULE_TOPIC_XXXX queue id):
    /// recovery gives that topic's entries their deliver time as tag code,
    /// as Java does (`messageDelayLevel`; empty: the TAGS hash).
    pub schedule_delays_ms: Vec<i64>,
    /// Tiered storage to object storage; `None`: off.
    pub tier: Option<crate::tier::TierConfig>,
}

impl StoreConfig {
    /// Defaults (1 GiB segments, buffered writes, async flush) under `root_dir`.
    pub fn new(root_dir: impl Into<PathBuf>) -> Self {
        Self {
            root_dir: root_dir.into(),
            segment_bytes: SEGMENT_BYTES_DEFAULT,
            write_mode: WriteMode::Buffered,
            flush_mode: FlushMode::Async {
                interval_ms: FLUSH_INTERVAL_MS_DEFAULT,
            },
            ring_capacity: RING_CAPACITY_DEFAULT,
            batch_bytes_max: BATCH_BYTES_MAX_DEFAULT,
            cq_entries_per_file: CQ_ENTRIES_PER_FILE_DEFAULT,
            checkpoint_interval_ms: CHECKPOINT_INTERVAL_MS_DEFAULT,
            cq_flush_interval_ms: CQ_FLUSH_INTERVAL_MS_DEFAULT,
            hot_tail_bytes: HOT_TAIL_BYTES_DEFAULT,
            retention: crate::retention::RetentionConfig::default(),
            replica: false,
            notify_written_shard: None,
            dispatch_gated: false,
            schedule_delays_ms: Vec::new(),
            tier: None,
        }
    }

    pub fn commitlog_dir(&self) -> PathBuf {
        self.root_dir.join("commitlog")
    }

    pub fn consumequeue_dir(&self) -> PathBuf {
        self.root_dir.join("consumequeue")
    }

    /// Directory for the broker's JSON files (topics.json, ...).
    pub fn config_dir(&self) -> PathBuf {
        self.root_dir.join("config")
    }

    pub fn checkpoint_path(&self) -> PathBuf {
        self.root_dir.join("checkpoint")
    }

    /// Largest record (or batch of records) one append may carry: it must fit
    /// a segment with room left for the blank filler.
    pub fn append_bytes_max(&self) -> usize {
        let by_segment = self
            .segment_bytes
            .saturating_sub(ferrocket_protocol::record::BLANK_BYTES_MIN as u64);
        usize::try_from(by_segment).unwrap_or(usize::MAX)
    }

    /// Rejects values the store cannot work with.
    pub fn validate(&self) -> Result<(), StoreError> {
        let bad = |reason: String| Err(StoreError::Config(reason));
        if self.segment_bytes < SEGMENT_BYTES_MIN {
            return bad(format!(
                "segment_bytes {} is below the minimum {SEGMENT_BYTES_MIN}",
                self.segment_bytes
            ));
        }
        if self.segment_bytes % SEGMENT_BYTES_MIN != 0 {
            return bad(format!(
                "segment_bytes {} is not a multiple of {SEGMENT_BYTES_MIN}",
                self.segment_bytes
            ));
        }
        if self.segment_bytes > i64::MAX as u64 / 2 {
            return bad(format!("segment_bytes {} is too large", self.segment_bytes));
        }
        if self.ring_capacity == 0 {
            return bad("ring_capacity must be positive".into());
        }
        if self.batch_bytes_max == 0 {
            return bad("batch_bytes_max must be positive".into());
        }
        if self.cq_entries_per_file == 0 {
            return bad("cq_entries_per_file must be positive".into());
        }
        if self.checkpoint_interval_ms == 0 || self.cq_flush_interval_ms == 0 {
            return bad("checkpoint and flush intervals must be positive".into());
        }
        if self.retention.clean_interval_ms == 0 || self.retention.delete_when.is_empty() {
            return bad("cleanResourceInterval must be positive and deleteWhen non-empty".into());
        }
        if self.retention.disk_max_used_percent > 100
            || self.retention.disk_clean_forcibly_percent > 100
            || self.retention.disk_warning_level_percent > 100
        {
            return bad("disk usage ratios must be at most 100".into());
        }
        if let FlushMode::Async { interval_ms: 0 } = self.flush_mode {
            return bad("async flush interval must be positive".into());
        }
        Ok(())
    }
}
