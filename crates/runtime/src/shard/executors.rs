//! Starting the shard executors: one glommio `LocalExecutor` per shard, each
//! on its own thread, pinned to one core of the configured list.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use glommio::{ExecutorJoinHandle, LocalExecutorBuilder, Placement};

/// Longest shard list accepted (far above any machine's core count; a typo
/// such as `--shards 10000` gets an error, not 10,000 threads).
pub const SHARD_COUNT_MAX: usize = 1024;

/// Why shards could not start or ended badly.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error("core {core} is not online (online cores: {online:?})")]
    NoSuchCore { core: usize, online: Vec<usize> },
    #[error("shard count {0} is outside 1..={SHARD_COUNT_MAX}")]
    ShardCount(usize),
    #[error("{inputs} per-shard inputs for {shards} shards")]
    InputCount { inputs: usize, shards: usize },
    #[error("starting shard {shard} failed: {reason}")]
    Spawn { shard: usize, reason: String },
    #[error("shard {shard} panicked or its executor failed: {reason}")]
    Join { shard: usize, reason: String },
}

/// Where shards run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardsConfig {
    /// Number of shards; 0 means one per core of `cores`, or with `cores`
    /// empty the host's default ([`host_shard_cores`]).
    pub shard_count: usize,
    /// Cores to run on; empty means every online core. Shard `i` runs on
    /// `cores[i % cores.len()]`.
    pub cores: Vec<usize>,
    /// Pin each shard's thread to its core (`Placement::Fixed`); otherwise
    /// the kernel schedules them freely.
    pub pin: bool,
    /// Thread name prefix.
    pub name: String,
}

impl Default for ShardsConfig {
    fn default() -> Self {
        Self {
            shard_count: 0,
            cores: Vec::new(),
            pin: true,
            name: "shard".into(),
        }
    }
}

/// The resolved placement: one entry per shard, its core when pinned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardPlan {
    pub name: String,
    pub cores: Vec<Option<usize>>,
}

impl ShardPlan {
    pub fn shard_count(&self) -> usize {
        self.cores.len()
    }
}

/// Every online core, in order.
pub fn online_cores() -> Vec<usize> {
    let mut cores: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|core| core.id)
        .collect();
    if cores.is_empty() {
        let count = std::thread::available_parallelism().map_or(1, |n| n.get());
        cores = (0..count).collect();
    }
    cores.sort_unstable();
    cores.dedup();
    cores
}

/// The cores a host's shards get when neither a shard count nor cores
/// are configured. On one or two cores: one shard (its executor also runs
/// the CommitLog appender): two shards plus an appender are three busy
/// threads on two cores, and one shard measured more messages at less CPU
/// per message there (tuning/RESULTS.md). On three or more: every core but
/// the first, which is left to the appender thread, interrupts and clients.
pub fn host_shard_cores(online: &[usize]) -> Vec<usize> {
    match online {
        [] => Vec::new(),
        [first] | [first, _] => vec![*first],
        [_, rest @ ..] => rest.to_vec(),
    }
}

impl ShardsConfig {
    /// Resolves the shard count and each shard's core.
    pub fn plan(&self) -> Result<ShardPlan, ShardError> {
        let online = online_cores();
        let cores = if self.cores.is_empty() && self.shard_count == 0 {
            host_shard_cores(&online)
        } else if self.cores.is_empty() {
            online.clone()
        } else {
            for core in &self.cores {
                if !online.contains(core) {
                    return Err(ShardError::NoSuchCore {
                        core: *core,
                        online,
                    });
                }
            }
            self.cores.clone()
        };
        let count = if self.shard_count == 0 {
            cores.len()
        } else {
            self.shard_count
        };
        if count == 0 || count > SHARD_COUNT_MAX {
            return Err(ShardError::ShardCount(count));
        }
        let placed = (0..count)
            .map(|i| self.pin.then(|| cores[i % cores.len()]))
            .collect();
        Ok(ShardPlan {
            name: self.name.clone(),
            cores: placed,
        })
    }
}

/// What a shard's entry learns about itself.
#[derive(Debug, Clone)]
pub struct ShardContext {
    pub index: usize,
    pub count: usize,
    /// The core this shard is pinned to, if pinned.
    pub core: Option<usize>,
    /// Set when the whole set must stop (also set by [`start_shards`] when a
    /// later shard failed to start).
    pub stop: Arc<AtomicBool>,
}

/// Running shards; join them to collect their results.
pub struct ShardSet<T: Send + 'static> {
    handles: Vec<ExecutorJoinHandle<T>>,
}

impl<T: Send + 'static> ShardSet<T> {
    pub fn len(&self) -> usize {
        self.handles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// Waits for every shard; results in shard order.
    pub fn join(self) -> Vec<Result<T, ShardError>> {
        self.handles
            .into_iter()
            .enumerate()
            .map(|(shard, handle)| {
                handle.join().map_err(|err| ShardError::Join {
                    shard,
                    reason: err.to_string(),
                })
            })
            .collect()
    }
}

/// Starts one executor per shard of `plan`; shard `i` runs
/// `entry(context, inputs[i])` and its result is collected by
/// [`ShardSet::join`]. `inputs` carries per-shard values that must move into
/// the shard (mesh endpoints, store handles).
///
/// When a shard fails to start, `stop` is set, the unused inputs are
/// dropped (which unblocks peers waiting to connect to them), the started
/// shards are joined, and the error is returned.
pub fn start_shards<S, T, F, Fut>(
    plan: &ShardPlan,
    inputs: Vec<S>,
    stop: Arc<AtomicBool>,
    entry: F,
) -> Result<ShardSet<T>, ShardError>
where
    S: Send + 'static,
    T: Send + 'static,
    F: Fn(ShardContext, S) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = T> + 'static,
{
    let count = plan.shard_count();
    if inputs.len() != count {
        return Err(ShardError::InputCount {
            inputs: inputs.len(),
            shards: count,
        });
    }
    let entry = Arc::new(entry);
    let mut handles = Vec::with_capacity(count);
    let mut inputs = inputs.into_iter();
    for (index, core) in plan.cores.iter().copied().enumerate() {
        let Some(input) = inputs.next() else {
            break;
        };
        let placement = core.map_or(Placement::Unbound, Placement::Fixed);
        let context = ShardContext {
            index,
            count,
            core,
            stop: stop.clone(),
        };
        let entry = entry.clone();
        let spawned = LocalExecutorBuilder::new(placement)
            .name(&format!("{}-{index}", plan.name))
            .spawn(move || async move { entry(context, input).await });
        match spawned {
            Ok(handle) => handles.push(handle),
            Err(err) => {
                stop.store(true, Ordering::SeqCst);
                drop(inputs);
                let started = ShardSet { handles };
                for (shard, result) in started.join().into_iter().enumerate() {
                    if let Err(join_err) = result {
                        tracing::warn!(shard, %join_err, "shard ended badly after a failed start");
                    }
                }
                return Err(ShardError::Spawn {
                    shard: index,
                    reason: err.to_string(),
                });
            }
        }
    }
    Ok(ShardSet { handles })
}
