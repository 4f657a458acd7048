//! Tiered storage: sealed CommitLog segments go to object storage in the
//! background, and reads of segments no longer on the local disk come back
//! from it.
//!
//! Everything here runs on one thread of its own (`ferrocket-tier`, a tokio
//! runtime): shards never wait on it. Sealed segments are immutable, so the
//! uploader reads their files directly; a segment is recorded in the
//! store's manifest only after its remote copy was read back and matched
//! size and CRC32, and only recorded segments may leave the local disk
//! (the appender drops them under the local budget). A shard that needs an
//! offloaded range sends a [`ferrocket_store::tier::FetchRequest`] over a
//! channel and awaits the answer (the same bridge the gRPC endpoint uses
//! between tokio and glommio); the fetcher puts the chunk, and reads the
//! next one ahead, into the store's bounded cache.

mod backend;
mod conditional;
mod expire;
mod fetch;
mod follow;
mod restore;
mod succession;
mod upload;

#[cfg(test)]
mod epoch_reset;
#[cfg(test)]
mod testing;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferrocket_store::tier::TierHandle;
use ferrocket_store::StoreHandle;

pub use backend::{open_backend, Backend};
use follow::Step;
pub use restore::restore_lost_store;

/// Name of the tier's thread.
pub const TIER_THREAD_NAME: &str = "ferrocket-tier";

/// Why tiered storage could not start.
#[derive(Debug, thiserror::Error)]
pub enum TierError {
    #[error("tiered storage configuration: {0}")]
    Config(String),
    #[error("tiered storage: {0}")]
    Start(String),
}

/// The running uploader and fetcher.
pub struct TierService {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TierService {
    /// Starts the tier's thread when the store has tiering on (`None` when off).
    pub fn start(store: &StoreHandle) -> Result<Option<Self>, TierError> {
        let Some(tier) = store.tier() else {
            return Ok(None);
        };
        let backend = open_backend(&tier.config)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(TIER_THREAD_NAME)
            .enable_all()
            .build()
            .map_err(|e| TierError::Start(format!("cannot start its runtime: {e}")))?;
        let (sender, requests) = futures_channel::mpsc::unbounded();
        tier.set_fetcher(sender);
        let stop = Arc::new(AtomicBool::new(false));
        let reader = store.reader();
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(TIER_THREAD_NAME.into())
            .spawn(move || {
                runtime.block_on(run(tier, backend, reader, requests, thread_stop));
            })
            .map_err(|e| TierError::Start(format!("cannot start its thread: {e}")))?;
        Ok(Some(Self {
            stop,
            thread: Some(thread),
        }))
    }

    /// Stops uploading (an upload in flight is abandoned: its segment
    /// stays local and is uploaded again after the next start).
    pub fn stop(mut self) {
        tracing::info!("tiered storage stopping");
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for TierService {
    fn drop(&mut self) {
        // A broker that failed to start: the thread ends within its next step.
        self.stop.store(true, Ordering::Release);
    }
}

async fn run(
    tier: TierHandle,
    backend: Backend,
    reader: ferrocket_store::CommitLogReader,
    requests: futures_channel::mpsc::UnboundedReceiver<ferrocket_store::tier::FetchRequest>,
    stop: Arc<AtomicBool>,
) {
    tokio::spawn(fetch::serve(Arc::clone(&tier), backend.clone(), requests));
    backend::probe(&backend, &tier).await;
    let interval = Duration::from_millis(tier.config.upload_interval_ms.max(10));
    let mut master: Option<MasterState> = None;
    while !stop.load(Ordering::Acquire) {
        // Only the set's master uploads and deletes; a slave follows its
        // published manifest (the role can change in place: asked each pass).
        if reader.is_replica() {
            master = None;
            follow::adopt(&tier, &backend, &reader, false).await;
        } else {
            let state = master.get_or_insert_with(MasterState::default);
            master_pass(&tier, &backend, &reader, &stop, state).await;
        }
        let mut waited = Duration::ZERO;
        while waited < interval && !stop.load(Ordering::Acquire) {
            let step = Duration::from_millis(50).min(interval - waited);
            tokio::time::sleep(step).await;
            waited += step;
        }
    }
}

/// Where a master's passes stand.
#[derive(Default)]
struct MasterState {
    /// An empty start that could not read the remote manifest found, since,
    /// that nothing of this set is remote (`restore::settled`).
    settled: bool,
    /// `restore::settled`'s refusal was logged.
    unsettled_logged: bool,
    /// The set's published manifest was taken (a promoted slave, or a
    /// restart, continues from it).
    adopted: bool,
    /// Leftovers of a crash between forgetting and deleting were swept.
    swept: bool,
    /// The local manifest changed since it was last published.
    unpublished: bool,
    /// The set's published manifest carries this epoch, above this
    /// master's: it uploads, publishes and deletes nothing (`fence`).
    fenced_by: Option<i32>,
}

/// Whether a fenced master is still below the epoch that fenced it (one
/// promoted in place since starts over).
fn still_fenced(tier: &TierHandle, state: &mut MasterState) -> bool {
    let Some(by) = state.fenced_by else {
        return false;
    };
    if tier.master_epoch() < by {
        return true;
    }
    *state = MasterState::default();
    false
}

/// A newer master of the set publishes: this one (deposed, still reaching
/// the store) stops uploading, publishing and deleting.
fn fence(tier: &TierHandle, state: &mut MasterState, by: i32) {
    let epoch = tier.master_epoch();
    let why = format!(
        "the replica set's published manifest (or one this broker took) carries controller \
         epoch {by}, above this master's epoch {epoch}: a newer master publishes it; this broker \
         uploads, publishes and deletes nothing more. If instead the controller's metadata was \
         lost (its epochs started again), set tieredStoreEpochBase={by} on every broker of the \
         set and restart them"
    );
    tracing::error!(published = by, epoch, "tiered storage: fenced: {why}");
    tier.status.set_error(Some(why));
    state.fenced_by = Some(by);
}

async fn master_pass(
    tier: &TierHandle,
    backend: &Backend,
    reader: &ferrocket_store::CommitLogReader,
    stop: &AtomicBool,
    state: &mut MasterState,
) {
    if still_fenced(tier, state) {
        return;
    }
    if !state.settled {
        state.settled = restore::settled(tier, backend, reader, &mut state.unsettled_logged).await;
        if !state.settled {
            return;
        }
    }
    if !state.adopted {
        match follow::adopt(tier, backend, reader, true).await {
            Step::Done => {}
            Step::Retry => return,
            Step::Fenced(by) => return fence(tier, state, by),
        }
        // Nothing is published or swept until the set's history is ours.
        if succession::history_taken(tier, backend, reader).await != Step::Done {
            return;
        }
        state.adopted = true;
        state.unpublished = true;
    }
    state.unpublished |= upload::pass(tier, backend, reader, stop).await;
    // Each step asks the role again: a master demoted in place mid-pass
    // must not publish over the new master's manifest or delete.
    if state.unpublished && !reader.is_replica() {
        match follow::publish(tier, backend).await {
            Step::Done => state.unpublished = false,
            Step::Retry => {}
            Step::Fenced(by) => return fence(tier, state, by),
        }
    }
    // Nothing leaves object storage while the published manifest may
    // still name it.
    if state.unpublished {
        return;
    }
    if !state.swept {
        // The sweep deletes what this manifest does not name: never what
        // the published one names, nothing once a newer master publishes.
        match expire::sweep(tier, backend, reader).await {
            Step::Done => state.swept = true,
            // Again after the next pass (the pass below may still delete
            // what expired: it publishes first).
            Step::Retry => {}
            Step::Fenced(by) => return fence(tier, state, by),
        }
    }
    state.swept &= expire::pass(tier, backend, reader, &mut state.unpublished).await;
}
