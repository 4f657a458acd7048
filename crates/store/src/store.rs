//! Opening the store and starting its appender: the entry points the broker
//! uses (see the crate docs for the whole sequence).

use std::sync::Arc;

use glommio::channels::shared_channel;
use glommio::{ExecutorJoinHandle, LocalExecutorBuilder, Placement};

use crate::appender::{self, AppenderRings, AppenderSetup, InShardAppender};
use crate::checkpoint_writer::CheckpointWriter;
use crate::commitlog::{CommitLogReader, CommitLogShared};
use crate::config::{StoreConfig, WriteMode};
use crate::error::StoreError;
use crate::io::{GlommioIo, StorageIo};
use crate::json_file::ConfigDir;
use crate::recovery::{recover, Recovered};
use crate::shard::{PortRings, ShardPort, StoreContext};
use crate::types::QueueOwnerFn;

/// Name of the appender's executor thread.
pub const APPENDER_THREAD_NAME: &str = "ferrocket-appender";

/// Opens the store: runs recovery (blocking) and returns the shared handle
/// plus the parts that start the appender.
pub struct MessageStore;

impl MessageStore {
    /// Opens with real io_uring I/O.
    pub fn open(config: StoreConfig) -> Result<(StoreHandle, AppenderParts), StoreError> {
        Self::open_with_io(config, Arc::new(GlommioIo))
    }

    /// Opens with a custom storage seam (fault injection in tests).
    pub fn open_with_io(
        config: StoreConfig,
        io: Arc<dyn StorageIo>,
    ) -> Result<(StoreHandle, AppenderParts), StoreError> {
        config.validate()?;
        let recovered = recover(&config)?;
        // Before anything can be offloaded again: remote copies past a cut
        // tail are stale.
        crate::tier::forget_past(&config.root_dir, config.segment_bytes, recovered.end)?;
        let hot = (config.write_mode == WriteMode::Direct).then_some(config.hot_tail_bytes);
        let shared = Arc::new(CommitLogShared::new(
            config.segment_bytes,
            recovered.segments.clone(),
            recovered.end,
            hot,
            recovered.damaged.clone(),
        ));
        shared
            .replica
            .store(config.replica, std::sync::atomic::Ordering::Release);
        if let Some(tier) = &config.tier {
            let tier = crate::tier::TierShared::open(
                tier.clone(),
                &config.root_dir,
                config.segment_bytes,
            )?;
            let _ = shared.tier.set(Arc::new(tier));
            let marker = config
                .root_dir
                .join(crate::tier::TIER_DIR)
                .join(crate::tier::UNRESTORED_MARKER);
            if marker.exists() {
                shared.disk.hold(crate::tier::UNRESTORED_REASON);
            }
        }
        let config = Arc::new(config);
        Ok((
            StoreHandle {
                config: Arc::clone(&config),
                shared: Arc::clone(&shared),
            },
            AppenderParts {
                config,
                io,
                shared,
                recovered,
            },
        ))
    }
}

/// The store as every thread sees it: `Send + Sync + Clone`.
#[derive(Clone)]
pub struct StoreHandle {
    config: Arc<StoreConfig>,
    shared: Arc<CommitLogShared>,
}

impl StoreHandle {
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// A reader for CommitLog bytes, usable from any thread.
    pub fn reader(&self) -> CommitLogReader {
        CommitLogReader {
            shared: Arc::clone(&self.shared),
        }
    }

    /// The `config/` directory for the broker's JSON files.
    pub fn config_dir(&self) -> Result<ConfigDir, StoreError> {
        ConfigDir::open(self.config.config_dir())
    }

    /// End of the readable CommitLog (`getMaxPhyOffset`).
    pub fn written_offset(&self) -> i64 {
        self.shared.written()
    }

    /// End of the flushed CommitLog.
    pub fn durable_offset(&self) -> i64 {
        self.shared.durable()
    }

    /// Tiered storage's shared state, when on.
    pub fn tier(&self) -> Option<crate::tier::TierHandle> {
        self.shared.tier.get().cloned()
    }

    /// Whether the CommitLog takes only a master's bytes (a slave's copy).
    pub fn is_replica(&self) -> bool {
        self.shared.is_replica()
    }

    /// A role change in place: from now on the CommitLog takes only a
    /// master's bytes (`true`) or only appends (`false`). The caller makes
    /// sure that nothing of the other kind is on its way to the appender.
    pub fn set_replica(&self, replica: bool) {
        self.shared
            .replica
            .store(replica, std::sync::atomic::Ordering::Release);
        tracing::info!(replica, "the CommitLog's role changed in place");
    }
}

/// What starts the appender; consumed by [`AppenderParts::start_appender`].
pub struct AppenderParts {
    config: Arc<StoreConfig>,
    io: Arc<dyn StorageIo>,
    shared: Arc<CommitLogShared>,
    recovered: Recovered,
}

impl AppenderParts {
    /// Next queue offset per queue after recovery (for tests and admin).
    pub fn recovered_queue_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.recovered
            .queue_offsets
            .get(&(Arc::from(topic), queue_id))
            .copied()
            .unwrap_or(0)
    }

    /// CommitLog bytes recovery read: 0 after a clean stop, what was
    /// written since the last checkpoint after a crash.
    pub fn recovery_scanned_bytes(&self) -> i64 {
        self.recovered.scanned_bytes
    }

    /// Starts the appender on its own executor thread at `placement` and
    /// returns one [`ShardPort`] per shard (index = shard id). `owner` maps a
    /// queue to its shard and must return a value below `shard_count`.
    pub fn start_appender(
        self,
        shard_count: usize,
        owner: QueueOwnerFn,
        placement: Placement,
    ) -> Result<(AppenderHandle, Vec<ShardPort>), StoreError> {
        let ring_capacity = self.config.ring_capacity;
        let (setup, checkpoint, ctx, shared) = self.prepare(shard_count, owner)?;
        let mut ports = Vec::with_capacity(shard_count);
        let mut requests = Vec::with_capacity(shard_count);
        let mut results = Vec::with_capacity(shard_count);
        for shard_id in 0..shard_count {
            let (request_tx, request_rx) = shared_channel::new_bounded(ring_capacity);
            let (result_tx, result_rx) = shared_channel::new_bounded(ring_capacity);
            requests.push(request_rx);
            results.push(result_tx);
            ports.push(ShardPort {
                shard_id,
                rings: PortRings::Shared {
                    requests: request_tx,
                    results: result_rx,
                },
                ctx: Arc::clone(&ctx),
            });
        }
        let join = LocalExecutorBuilder::new(placement)
            .name(APPENDER_THREAD_NAME)
            .spawn(move || appender::run(setup, AppenderRings::Shared { requests, results }))
            .map_err(|e| StoreError::Unavailable(format!("cannot start the appender: {e}")))?;
        Ok((
            AppenderHandle {
                join: AppenderJoin::Thread(join),
                checkpoint,
                shared,
            },
            ports,
        ))
    }

    /// For a one-shard broker: the appender runs as tasks on the shard's own
    /// executor (started by [`ShardStore::connect`](crate::ShardStore::connect)
    /// on the returned port) instead of on a thread of its own. An append
    /// then costs no cross-thread hand-off and no wake-up of a parked thread
    /// in either direction; the shard's thread does the CommitLog writes.
    pub fn start_appender_in_shard(
        self,
        owner: QueueOwnerFn,
    ) -> Result<(AppenderHandle, ShardPort), StoreError> {
        let (setup, checkpoint, ctx, shared) = self.prepare(1, owner)?;
        let (result_tx, result_rx) = std::sync::mpsc::channel();
        let port = ShardPort {
            shard_id: 0,
            rings: PortRings::InShard(Box::new(InShardAppender {
                setup,
                result: result_tx,
            })),
            ctx,
        };
        Ok((
            AppenderHandle {
                join: AppenderJoin::InShard(result_rx),
                checkpoint,
                shared,
            },
            port,
        ))
    }

    /// The appender's setup and what every shard shares; the caller makes
    /// the rings, which differ between the two ways of starting.
    fn prepare(self, shard_count: usize, owner: QueueOwnerFn) -> Result<Prepared, StoreError> {
        if shard_count == 0 {
            return Err(StoreError::Config("shard_count must be positive".into()));
        }
        let checkpoint = Arc::new(CheckpointWriter::new(
            self.config.checkpoint_path(),
            shard_count,
            self.recovered.end,
        ));
        let ctx = Arc::new(StoreContext {
            config: StoreConfig::clone(&self.config),
            shared: Arc::clone(&self.shared),
            owner: Arc::clone(&owner),
            checkpoint: Arc::clone(&checkpoint),
            shard_count,
        });
        let setup = AppenderSetup {
            config: StoreConfig::clone(&self.config),
            io: self.io,
            shared: Arc::clone(&self.shared),
            queue_offsets: self.recovered.queue_offsets,
            floors: self.recovered.floors,
            end: self.recovered.end,
            owner,
            checkpoint: Arc::clone(&checkpoint),
        };
        Ok((setup, checkpoint, ctx, self.shared))
    }
}

/// What [`AppenderParts::prepare`] hands to either way of starting.
type Prepared = (
    AppenderSetup,
    Arc<CheckpointWriter>,
    Arc<StoreContext>,
    Arc<CommitLogShared>,
);

/// How to wait for the appender's end.
enum AppenderJoin {
    Thread(ExecutorJoinHandle<Result<i64, StoreError>>),
    /// Sent by the shard task running the appender; a disconnect means the
    /// shard's executor ended without letting it finish.
    InShard(std::sync::mpsc::Receiver<Result<i64, StoreError>>),
}

/// The running appender (its thread, or its task on the only shard).
pub struct AppenderHandle {
    join: AppenderJoin,
    checkpoint: Arc<CheckpointWriter>,
    shared: Arc<CommitLogShared>,
}

impl AppenderHandle {
    /// Waits for the appender to finish (after every shard's
    /// `ShardStore::shutdown`), then writes the final checkpoint. Blocking:
    /// call it from a plain thread, not from a shard executor.
    pub fn join(self) -> Result<(), StoreError> {
        let outcome = match self.join {
            AppenderJoin::Thread(join) => join
                .join()
                .map_err(|e| StoreError::Unavailable(format!("appender thread failed: {e}")))?,
            AppenderJoin::InShard(result) => result.recv().map_err(|_| {
                StoreError::Unavailable("the shard running the appender ended first".into())
            })?,
        };
        self.checkpoint.write(self.shared.durable())?;
        outcome.map(|_| ())
    }

    /// The last checkpoint written (tests, admin).
    pub fn last_checkpoint(&self) -> crate::checkpoint::StoreCheckpoint {
        self.checkpoint.last()
    }
}
