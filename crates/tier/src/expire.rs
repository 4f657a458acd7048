//! Remote retention's pass: the segments the store says have expired
//! ([`ferrocket_store::CommitLogReader::remote_expired`]) are first
//! forgotten in the manifest (durably), then deleted from object storage.
//! A crash or a failed delete between the two leaves an object no entry
//! names: [`sweep`] deletes such leftovers below the local start, and a
//! deposed master's copies of segments this master uploaded itself (at
//! the start of each term as master, and after a failed delete).

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use futures_lite::StreamExt;
use object_store::path::Path as ObjectPath;

use ferrocket_store::tier::TierHandle;
use ferrocket_store::CommitLogReader;

use crate::backend::{explain, segment_epoch, segment_start, Backend};
use crate::follow::Step;

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
/// a deposed master's copy of that segment). Never an object tagged with
/// an epoch above this master's (a newer master's upload, perhaps in
/// flight: this one is the deposed). Other objects in between may
/// be uploads about to be recorded: never touched (and none is in
/// flight: the sweep runs between upload passes). Whoever uploaded them: an object of
/// another uploader (a former master of the set, or a deposed one still
/// reaching the store) that this master's manifest does not name is never
/// read through it either, so it is garbage too; one the manifest names
/// (adopted from the set's published manifest) is kept, as are objects
/// of the layout before uploader ids that it names.
///
/// Guard against being the deposed one (a zombie master not yet told):
/// after listing, the set's published manifest is read again; nothing is
/// deleted when it carries a higher epoch ([`Step::Fenced`]), and no key
/// it names is ever deleted (the newer master's copy of a start both
/// uploaded). Answers [`Step::Done`] when the sweep completed.
pub(crate) async fn sweep(tier: &TierHandle, backend: &Backend, reader: &CommitLogReader) -> Step {
    let Some(leftovers) = leftovers(tier, backend, reader).await else {
        return Step::Retry;
    };
    // What is written from here on may be another uploader's, named by a
    // manifest published after the read below: never deleted now.
    let check_ms = now_ms().saturating_sub(CLOCK_SLACK_MS) as i64;
    let named = match crate::follow::published_keys(tier, backend).await {
        Ok(named) => named,
        Err(step) => return step,
    };
    if reader.is_replica() {
        return Step::Retry;
    }
    let doomed = unnamed(leftovers, &named);
    let mut all = true;
    for key in &doomed {
        all &= match written_before(tier, backend, key, check_ms).await {
            Some(true) => delete(tier, backend, key).await,
            Some(false) => false,
            None => true,
        };
    }
    if !doomed.is_empty() {
        tracing::info!(
            deleted = doomed.len(),
            "tiered storage: deleted objects the manifest no longer names"
        );
    }
    match all {
        true => Step::Done,
        false => Step::Retry,
    }
}

/// How far the store's clock may be behind this broker's: an object
/// written up to this long before the sweep's check started counts as
/// written after it (kept until a later sweep: a crash's leftover just
/// made is deleted this much later).
const CLOCK_SLACK_MS: u64 = 10_000;

/// Whether the object at `key` was last written before `check_ms` (ms
/// since the epoch, by the store's clock): `Some(false)` when written
/// since or when the store cannot say now (kept; the sweep runs again),
/// `None` when it is gone already.
async fn written_before(
    tier: &TierHandle,
    backend: &Backend,
    key: &ObjectPath,
    check_ms: i64,
) -> Option<bool> {
    match backend.store.head(key).await {
        Ok(meta) if meta.last_modified.timestamp_millis() < check_ms => Some(true),
        Ok(_) => {
            tracing::info!(key = %key,
                "tiered storage: an object the manifest does not name was written during the \
                 sweep's check; kept for now");
            Some(false)
        }
        Err(object_store::Error::NotFound { .. }) => None,
        Err(e) => {
            let why = explain(&e);
            tracing::warn!(key = %key, error = %why, "tiered storage: cannot look at an object to sweep");
            tier.status.set_error(Some(why));
            Some(false)
        }
    }
}

/// The leftovers the sweep may delete: none the published manifest names.
fn unnamed(leftovers: Vec<ObjectPath>, published: &HashSet<String>) -> Vec<ObjectPath> {
    leftovers
        .into_iter()
        .filter(|key| !published.contains(key.as_ref()))
        .collect()
}

/// The objects [`sweep`] would delete by this store's manifest alone;
/// `None` when the store cannot be listed now.
async fn leftovers(
    tier: &TierHandle,
    backend: &Backend,
    reader: &CommitLogReader,
) -> Option<Vec<ObjectPath>> {
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
            Err(object_store::Error::NotFound { .. }) => return Some(Vec::new()),
            Err(e) => {
                tracing::warn!(error = %explain(&e), "tiered storage: cannot list the object store");
                return None;
            }
        };
        let Some(name) = meta.location.filename() else {
            continue;
        };
        let Some(start) = segment_start(name) else {
            continue;
        };
        // A master of a later epoch (a disk clone sharing the uploader id
        // too) uploads it: never this store's to delete. The check's
        // timestamp cannot tell: an S3 multipart upload's Last-Modified is
        // when it began.
        if segment_epoch(name).is_some_and(|epoch| epoch > tier.master_epoch()) {
            continue;
        }
        let seg_end = start + tier.offloaded.segment_bytes() as i64;
        let stale = seg_end <= local_min || start >= end;
        let entry = tier.offloaded.get(start);
        let named = entry
            .as_ref()
            .is_some_and(|entry| entry.key == meta.location.as_ref());
        // A segment this store uploaded itself: another object of its
        // start (a deposed master's copy, which may diverge) is never
        // read through this manifest.
        let own = entry.is_some_and(|entry| backend.uploaded_by(&entry.key, start, &tier.uploader));
        if (stale || own) && !named {
            leftovers.push(meta.location);
        }
    }
    Some(leftovers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocket_store::tier::{TierBackend, TierConfig};
    use ferrocket_store::{MessageStore, StoreConfig};
    use object_store::PutPayload;

    /// The set's published manifest as a master of `epoch` naming `key`
    /// at `start`.
    fn manifest(epoch: i32, start: i64, key: &ObjectPath) -> PutPayload {
        let json = format!(
            r#"{{"epoch":{epoch},"segments":[{{"start":{start},"size":1,"crc32":0,"key":"{key}","uploadedMs":1}}]}}"#
        );
        PutPayload::from(json.into_bytes())
    }

    /// Backdates the object at `key` of the directory store at `root`
    /// by ten minutes.
    fn backdate(root: &std::path::Path, key: &ObjectPath) {
        let file = std::fs::File::options()
            .write(true)
            .open(root.join(key.as_ref()))
            .unwrap();
        let then = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
        file.set_modified(then).unwrap();
    }

    async fn exists(backend: &Backend, key: &ObjectPath) -> bool {
        backend.store.head(key).await.is_ok()
    }

    /// A master of epoch 3 whose (empty) log makes both objects past its
    /// end leftovers by its own manifest: while a newer master's copy is
    /// published it deletes nothing; at its own epoch it still spares the
    /// key the published copy names.
    #[tokio::test]
    async fn a_sweep_spares_what_the_published_manifest_names() {
        let store_dir = tempfile::tempdir().unwrap();
        let remote = tempfile::tempdir().unwrap();
        let tier_config = TierConfig::new(TierBackend::Posix {
            path: remote.path().to_path_buf(),
        });
        let backend = crate::open_backend(&tier_config).unwrap();
        let mut config = StoreConfig::new(store_dir.path());
        config.tier = Some(tier_config);
        let (store, _parts) = MessageStore::open(config).unwrap();
        let (tier, reader) = (store.tier().unwrap(), store.reader());
        tier.set_master_epoch(3);
        let seg = tier.offloaded.segment_bytes() as i64;
        let own = backend.segment_key(0, "zombie");
        let newer = backend.segment_key(seg, "newmaster");
        for key in [&own, &newer] {
            backend
                .store
                .put(key, PutPayload::from_static(b"x"))
                .await
                .unwrap();
            // Written well before the sweep (a fresh write is spared).
            backdate(remote.path(), key);
        }
        let published = backend.manifest_key();
        backend
            .store
            .put(&published, manifest(4, seg, &newer))
            .await
            .unwrap();
        assert_eq!(sweep(&tier, &backend, &reader).await, Step::Fenced(4));
        assert!(exists(&backend, &own).await && exists(&backend, &newer).await);
        backend
            .store
            .put(&published, manifest(3, seg, &newer))
            .await
            .unwrap();
        assert_eq!(sweep(&tier, &backend, &reader).await, Step::Done);
        assert!(!exists(&backend, &own).await, "the leftover stayed");
        assert!(
            exists(&backend, &newer).await,
            "a published key was deleted"
        );
    }

    /// Between the sweep's read of the published manifest and its
    /// deletes, another uploader (a disk clone sharing the uploader id)
    /// writes an object the sweep listed as a leftover: it is kept; an
    /// older leftover goes.
    #[tokio::test]
    async fn a_sweep_keeps_what_is_written_during_its_check() {
        let store_dir = tempfile::tempdir().unwrap();
        let remote = tempfile::tempdir().unwrap();
        let tier_config = TierConfig::new(TierBackend::Posix {
            path: remote.path().to_path_buf(),
        });
        let mut backend = crate::open_backend(&tier_config).unwrap();
        let mut config = StoreConfig::new(store_dir.path());
        config.tier = Some(tier_config);
        let (store, _parts) = MessageStore::open(config).unwrap();
        let (tier, reader) = (store.tier().unwrap(), store.reader());
        tier.set_master_epoch(3);
        let seg = tier.offloaded.segment_bytes() as i64;
        let old = backend.segment_key(0, "0000000000000001");
        let raced = backend.segment_key(seg, "0000000000000001");
        for key in [&old, &raced] {
            backend
                .store
                .put(key, PutPayload::from_static(b"x"))
                .await
                .unwrap();
            backdate(remote.path(), key);
        }
        let published = backend.manifest_key();
        let other = backend.segment_key(2 * seg, "0000000000000002");
        backend
            .store
            .put(&published, manifest(3, 2 * seg, &other))
            .await
            .unwrap();
        let odd = crate::testing::Odd::new(std::sync::Arc::clone(&backend.store));
        *odd.write_on_read.lock().unwrap() = Some((published, raced.clone()));
        backend.store = std::sync::Arc::new(odd);
        assert_eq!(sweep(&tier, &backend, &reader).await, Step::Retry);
        assert!(!exists(&backend, &old).await, "the old leftover stayed");
        assert!(exists(&backend, &raced).await, "a fresh write was deleted");
    }

    /// A deposed master (epoch 3) sweeping while a newer master (epoch 4)
    /// uploads: the newer master's object is kept though its timestamp is
    /// old (an S3 multipart upload's Last-Modified is when it began); an
    /// older epoch's leftover goes.
    #[tokio::test]
    async fn a_sweep_keeps_a_newer_epochs_object_whatever_its_time() {
        let store_dir = tempfile::tempdir().unwrap();
        let remote = tempfile::tempdir().unwrap();
        let tier_config = TierConfig::new(TierBackend::Posix {
            path: remote.path().to_path_buf(),
        });
        let backend = crate::open_backend(&tier_config).unwrap();
        let mut config = StoreConfig::new(store_dir.path());
        config.tier = Some(tier_config);
        let (store, _parts) = MessageStore::open(config).unwrap();
        let (tier, reader) = (store.tier().unwrap(), store.reader());
        tier.set_master_epoch(3);
        let seg = tier.offloaded.segment_bytes() as i64;
        let older = backend.segment_key(0, &crate::backend::uploader_tag("zombie", 2));
        let newer = backend.segment_key(seg, &crate::backend::uploader_tag(&tier.uploader, 4));
        for key in [&older, &newer] {
            backend
                .store
                .put(key, PutPayload::from_static(b"x"))
                .await
                .unwrap();
            backdate(remote.path(), key);
        }
        let other = backend.segment_key(2 * seg, "elsewhere");
        backend
            .store
            .put(&backend.manifest_key(), manifest(3, 2 * seg, &other))
            .await
            .unwrap();
        assert_eq!(sweep(&tier, &backend, &reader).await, Step::Done);
        assert!(!exists(&backend, &older).await, "the older leftover stayed");
        assert!(
            exists(&backend, &newer).await,
            "a newer epoch's object was deleted"
        );
    }
}
