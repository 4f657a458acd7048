//! Remote retention's pass: the segments the store says have expired
//! ([`ferrocket_store::CommitLogReader::remote_expired`]) are first
//! forgotten in the manifest (durably), then deleted from object storage.
//! A crash or a failed delete between the two leaves an object no entry
//! names: [`sweep`] deletes such leftovers below the local start, and a
//! deposed master's copies of segments this master uploaded itself (at
//! the start of each term as master, and after a failed delete).

use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use futures_lite::StreamExt;
use object_store::path::Path as ObjectPath;

use ferrocket_store::tier::TierHandle;
use ferrocket_store::CommitLogReader;

use crate::backend::{explain, segment_start, Backend};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// One pass; answers whether every delete went through (else a sweep
/// should follow). The forgetting manifest is published before any object
/// goes (a slave never reads an entry whose object is gone); when that
/// fails, `unpublished` is set and nothing is deleted now.
pub(crate) async fn pass(
    tier: &TierHandle,
    backend: &Backend,
    reader: &CommitLogReader,
    unpublished: &mut bool,
) -> bool {
    let expired = reader.remote_expired(now_ms());
    if expired.is_empty() {
        return true;
    }
    let starts: Vec<i64> = expired.iter().map(|entry| entry.start).collect();
    if let Err(e) = tier.offloaded.forget(&starts) {
        tracing::error!(error = %e, "tiered storage: cannot update the manifest; remote segments stay");
        tier.status.set_error(Some(e.to_string()));
        return true;
    }
    // Demoted in place: the new master publishes and deletes.
    // A fenced master learns it from the next pass's publish.
    if reader.is_replica()
        || crate::follow::publish(tier, backend).await != crate::follow::Step::Done
    {
        *unpublished = true;
        return false;
    }
    let mut all = true;
    for entry in &expired {
        if reader.is_replica() {
            return false;
        }
        all &= delete(tier, backend, &ObjectPath::from(entry.key.as_str())).await;
    }
    tracing::info!(
        deleted = expired.len(),
        logical_min = reader.logical_min_offset(),
        store = %backend.describe,
        "tiered storage: remote retention deleted offloaded segments"
    );
    all
}

/// Deletes one object no manifest entry names any more.
async fn delete(tier: &TierHandle, backend: &Backend, key: &ObjectPath) -> bool {
    match backend.store.delete(key).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => {
            tier.status
                .remote_deleted_segments
                .fetch_add(1, Ordering::Relaxed);
            true
        }
        Err(e) => {
            let why = explain(&e);
            tracing::warn!(key = %key, error = %why,
                "tiered storage: cannot delete an expired object; it is deleted later");
            tier.status.set_error(Some(why));
            false
        }
    }
}

/// Deletes the segment objects of this replica set that the manifest does
/// not name: below the local start (left by a crash or a failed delete),
/// at or past the CommitLog's end (copies of a tail cut back by a fork
/// point or recovery, forgotten then), and in between at the starts this
/// store uploaded and recorded itself (another uploader's object there:
/// a deposed master's copy of that segment). Other objects in between may
/// be uploads about to be recorded: never touched (and none is in
/// flight: the sweep runs between upload passes). Whoever uploaded them: an object of
/// another uploader (a former master of the set, or a deposed one still
/// reaching the store) that this master's manifest does not name is never
/// read through it either, so it is garbage too; one the manifest names
/// (adopted from the set's published manifest) is kept, as are objects
/// of the layout before uploader ids that it names. Answers whether it
/// completed.
pub(crate) async fn sweep(tier: &TierHandle, backend: &Backend, reader: &CommitLogReader) -> bool {
    let local_min = reader.min_offset();
    let end = reader.written_offset();
    // Only this replica set's own sub-prefix: another set's objects (same
    // bucket and tieredStoreFilePath) are never its to delete.
    let dir = backend.segment_dir();
    let mut listing = backend.store.list(Some(&dir));
    let mut leftovers = Vec::new();
    while let Some(item) = listing.next().await {
        let meta = match item {
            Ok(meta) => meta,
            // Nothing uploaded yet (a directory not made yet).
            Err(object_store::Error::NotFound { .. }) => return true,
            Err(e) => {
                tracing::warn!(error = %explain(&e), "tiered storage: cannot list the object store");
                return false;
            }
        };
        let start = meta.location.filename().and_then(segment_start);
        if let Some(start) = start {
            let seg_end = start + tier.offloaded.segment_bytes() as i64;
            let stale = seg_end <= local_min || start >= end;
            let entry = tier.offloaded.get(start);
            let named = entry
                .as_ref()
                .is_some_and(|entry| entry.key == meta.location.as_ref());
            // A segment this store uploaded itself: another object of its
            // start (a deposed master's copy, which may diverge) is
            // never read through this manifest.
            let own = entry.is_some_and(|entry| {
                entry.key == backend.segment_key(start, &tier.uploader).as_ref()
            });
            if (stale || own) && !named {
                leftovers.push(meta.location);
            }
        }
    }
    if reader.is_replica() {
        return false;
    }
    let mut all = true;
    for key in &leftovers {
        all &= delete(tier, backend, key).await;
    }
    if !leftovers.is_empty() {
        tracing::info!(
            deleted = leftovers.len(),
            "tiered storage: deleted objects the manifest no longer names"
        );
    }
    all
}
