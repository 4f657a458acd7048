//! A lost disk restored from the object store, at start, before the
//! store's recovery: when tiering is on and the local CommitLog holds no
//! segment, the manifest's remote copy names the verified segments of this
//! broker (same store, same prefix). The contiguous run of them that ends
//! at the newest is downloaded (each checked against its size and CRC32)
//! into a staging directory with an empty segment after it, which then
//! replaces the empty CommitLog directory in one rename, and the manifest
//! is written locally. Recovery then rebuilds every ConsumeQueue from
//! those segments, the index scanner indexes them, the CommitLog goes on
//! where the remote run ends, and the local budget drops the segments
//! again (they are offloaded). A crash before the rename restores again
//! at the next start.
//!
//! Re-dispatching the remote segments (rather than uploading ConsumeQueue
//! and index companions per segment) keeps offload free of extra objects
//! and keeps remote data in one form, at the price of reading the remote
//! CommitLog once at such a start and holding it locally until recovery
//! and the index are through.
//!
//! An empty store whose object store cannot be read at start (down,
//! refusing the credentials) starts serving reads but leaves
//! [`UNRESTORED_MARKER`] in the tier directory: the store takes no writes
//! (answered SERVICE_NOT_AVAILABLE, routed read-only) and the tier uploads
//! and deletes nothing until the master has read the remote manifest and
//! found no segment of this set there ([`settled`]). Otherwise messages
//! acknowledged from offset 0 would collide with the lost disk's, their
//! uploads overwrite its objects, and the crash sweep delete those past
//! the log's end. A manifest that does name segments keeps writes held:
//! the next start (its store still empty) restores them.
//!
//! A controller-mode slave restores nothing: its CommitLog is the set's
//! master's copy, which HA sends it (reading through the tier where the
//! master dropped a segment). Segments restored under it could diverge
//! from the master's log, and its role is known before the store opens
//! (the controller gives it first; a broker with an empty store and no
//! epoch file has no claim to be elected). A leftover
//! [`UNRESTORED_MARKER`] is removed then: the master's bytes cannot
//! collide with the set's objects.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use futures_lite::StreamExt;
use object_store::path::Path as ObjectPath;

use ferrocket_store::tier::{OffloadEntry, Offloaded, TierHandle, TIER_DIR, UNRESTORED_MARKER};
use ferrocket_store::{offset_file_name, CommitLogReader, StoreConfig};

use crate::backend::{explain, open_backend, Backend};
use crate::TierError;

/// Staging directory under the store root.
const STAGING_DIR: &str = "commitlog.restoring";

/// What the remote manifest said.
enum Remote {
    /// None published: nothing of this set is remote.
    Absent,
    Entries(Vec<OffloadEntry>),
    /// The store did not answer (why).
    Unreadable(String),
}

/// Restores an empty store from the object store when it names segments
/// of this broker (see the module doc). Blocking; answers how many
/// segments came back. A store that cannot be read is logged and the
/// broker starts on the empty store.
pub fn restore_lost_store(config: &StoreConfig) -> Result<usize, TierError> {
    let Some(tier) = &config.tier else {
        return Ok(0);
    };
    let commitlog = config.commitlog_dir();
    let marker = config.root_dir.join(TIER_DIR).join(UNRESTORED_MARKER);
    if config.replica {
        // Only a controller-mode slave keeps the tier as a replica.
        if !has_segments(&commitlog)? {
            tracing::info!(
                "tiered storage: the store is empty and this broker runs as a slave: \
                 nothing is restored from the object store, HA copies the master's log"
            );
        }
        return remove_marker(&marker).map(|()| 0);
    }
    if has_segments(&commitlog)? {
        // A start held by the marker took no writes: its log is empty.
        if !(marker.exists() && holds_no_record(&commitlog)?) {
            return Ok(0);
        }
        std::fs::remove_dir_all(&commitlog).map_err(|e| start_error(&commitlog, e))?;
    }
    let backend = open_backend(tier)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| TierError::Start(format!("cannot start the restore's runtime: {e}")))?;
    let started = Instant::now();
    let entries = match runtime.block_on(remote_entries_retried(&backend))? {
        Remote::Absent => {
            remove_marker(&marker)?;
            return Ok(0);
        }
        Remote::Entries(entries) => entries,
        Remote::Unreadable(why) => {
            tracing::error!(store = %backend.describe, error = %why,
                "tiered storage: the local store is empty and the manifest's remote copy \
                 cannot be read; serving reads only, and uploading or deleting nothing, until \
                 it can be read");
            mark_unrestored(&config.root_dir.join(TIER_DIR))?;
            return Ok(0);
        }
    };
    let run = newest_run(&entries, config.segment_bytes);
    if run.is_empty() {
        remove_marker(&marker)?;
        return Ok(0);
    }
    let staging = config.root_dir.join(STAGING_DIR);
    clear(&staging)?;
    check_room(&config.root_dir, room_needed(&run, config.segment_bytes))?;
    let kept = runtime.block_on(download(&backend, &run, &staging))?;
    let Some(last) = kept.last() else {
        return Ok(0);
    };
    let end = last.start + config.segment_bytes as i64;
    let tail = staging.join(offset_file_name(end));
    std::fs::File::create(&tail).map_err(|e| start_error(&tail, e))?;
    Offloaded::write_restored(&config.root_dir.join(TIER_DIR), &kept)
        .map_err(|e| TierError::Start(format!("writing the restored manifest: {e}")))?;
    std::fs::create_dir_all(&commitlog).map_err(|e| start_error(&commitlog, e))?;
    std::fs::rename(&staging, &commitlog).map_err(|e| start_error(&commitlog, e))?;
    remove_marker(&marker)?;
    tracing::info!(segments = kept.len(), from = kept[0].start, end, store = %backend.describe,
        took_ms = started.elapsed().as_millis() as u64,
        "tiered storage: the empty store was restored from the object store; \
         the CommitLog goes on where the remote segments end");
    Ok(kept.len())
}

fn start_error(path: &Path, e: std::io::Error) -> TierError {
    TierError::Start(format!("restoring {}: {e}", path.display()))
}

/// Removes what an interrupted restore left in `staging`.
fn clear(staging: &Path) -> Result<(), TierError> {
    if staging.exists() {
        std::fs::remove_dir_all(staging).map_err(|e| start_error(staging, e))?;
    }
    Ok(())
}

/// Free bytes a restore of `run` needs: the run, the empty segment the
/// CommitLog goes on in, and an eighth of the run again as headroom for
/// the ConsumeQueues and index files recovery rebuilds from it (a
/// ConsumeQueue entry is 20 bytes: an eighth covers messages down to
/// about 160 bytes, with room left for the index).
fn room_needed(run: &[OffloadEntry], segment_bytes: u64) -> u64 {
    let run_bytes: u64 = run.iter().map(|entry| entry.size).sum();
    run_bytes
        .saturating_add(segment_bytes)
        .saturating_add(run_bytes / 8)
}

/// Refuses a restore the file system holding `root` (or its nearest
/// existing parent: a lost disk's store root may not exist yet) has no
/// room for, rather than filling the disk. Space that cannot be told is
/// not a refusal.
fn check_room(root: &Path, needed: u64) -> Result<(), TierError> {
    let Some(existing) = root.ancestors().find(|dir| dir.exists()) else {
        return Ok(());
    };
    let Some(free) = ferrocket_store::disk_free_bytes(existing) else {
        return Ok(());
    };
    if free >= needed {
        return Ok(());
    }
    Err(TierError::Start(format!(
        "the store is empty and the object store holds segments to restore, but {} has {free} \
         bytes free and the restore needs {needed} (the segments, the segment the CommitLog goes \
         on in, and an eighth more for the ConsumeQueues and index rebuilt from them); free \
         space there, or give the store a larger disk",
        existing.display()
    )))
}

/// Whether the CommitLog directory holds a segment (a file named by an
/// offset).
fn has_segments(dir: &Path) -> Result<bool, TierError> {
    let listing = match std::fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(start_error(dir, e)),
    };
    for item in listing {
        let name = item.map_err(|e| start_error(dir, e))?.file_name();
        let name = name.to_string_lossy();
        if name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The remote manifest's entries.
async fn remote_entries(backend: &Backend) -> Result<Remote, TierError> {
    let key = backend.manifest_key();
    let bytes = match backend.store.get(&key).await {
        Ok(got) => got.bytes().await,
        Err(e) => Err(e),
    };
    match bytes {
        Ok(bytes) => Offloaded::decode(&bytes)
            .map(Remote::Entries)
            .map_err(|e| TierError::Start(format!("the manifest's remote copy {key}: {e}"))),
        Err(object_store::Error::NotFound { .. }) => Ok(Remote::Absent),
        Err(e) => Ok(Remote::Unreadable(explain(&e))),
    }
}

/// [`remote_entries`], asked again a few times (about 1.5 s in all) while
/// the store does not answer: a brief outage should not hold writes.
async fn remote_entries_retried(backend: &Backend) -> Result<Remote, TierError> {
    let mut pause = Duration::from_millis(100);
    for _ in 0..4 {
        match remote_entries(backend).await? {
            Remote::Unreadable(_) => tokio::time::sleep(pause).await,
            answer => return Ok(answer),
        }
        pause *= 2;
    }
    remote_entries(backend).await
}

/// Whether a CommitLog directory holds nothing written: its only segment
/// is the first, and its first record's size field is zero.
fn holds_no_record(dir: &Path) -> Result<bool, TierError> {
    let first = dir.join(offset_file_name(0));
    let mut others = std::fs::read_dir(dir).map_err(|e| start_error(dir, e))?;
    let only_first = others.all(|item| item.map(|i| i.path() == first).unwrap_or(false));
    if !only_first {
        return Ok(false);
    }
    let mut head = [0u8; 4];
    let read = std::fs::File::open(&first)
        .and_then(|mut file| std::io::Read::read(&mut file, &mut head))
        .map_err(|e| start_error(&first, e))?;
    Ok(read == 0 || head == [0; 4])
}

fn remove_marker(marker: &Path) -> Result<(), TierError> {
    match std::fs::remove_file(marker) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(start_error(marker, e)),
    }
}

/// Writes [`UNRESTORED_MARKER`] durably, before the store opens.
fn mark_unrestored(dir: &Path) -> Result<(), TierError> {
    std::fs::create_dir_all(dir).map_err(|e| start_error(dir, e))?;
    let marker = dir.join(UNRESTORED_MARKER);
    let file = std::fs::File::create(&marker).map_err(|e| start_error(&marker, e))?;
    file.sync_all().map_err(|e| start_error(&marker, e))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| start_error(dir, e))
}

/// On the master, before its first upload or delete: whether it may go
/// on. With [`UNRESTORED_MARKER`] present, only once the remote manifest
/// was read and names no segment (the marker is then removed); a manifest
/// naming segments this store lacks stops uploads and deletes for good
/// (the status says what to do), and an unreadable one is asked again
/// next pass. `warned`: the error was logged already.
pub(crate) async fn settled(
    tier: &TierHandle,
    backend: &Backend,
    reader: &CommitLogReader,
    warned: &mut bool,
) -> bool {
    let marker = tier.offloaded.dir().join(UNRESTORED_MARKER);
    if !marker.exists() {
        return true;
    }
    let why = match remote_entries(backend).await {
        Ok(Remote::Absent) => None,
        Ok(Remote::Entries(entries)) if entries.is_empty() => None,
        Ok(Remote::Entries(entries)) => Some(format!(
            "the object store holds {} segments of this replica set that this broker's \
             store lacks (it started empty while the store could not be read, so they were \
             not restored); it takes no writes and uploads or deletes nothing: restart the \
             broker to restore them",
            entries.len()
        )),
        Ok(Remote::Unreadable(why)) => Some(why),
        Err(e) => Some(e.to_string()),
    };
    if let Some(why) = why {
        if !*warned {
            tracing::error!(error = %why, "tiered storage: uploads and deletes wait for the remote manifest");
            *warned = true;
        }
        tier.status.set_error(Some(why));
        return false;
    }
    if let Err(e) = std::fs::remove_file(&marker) {
        tier.status
            .set_error(Some(format!("{}: {e}", marker.display())));
        return false;
    }
    reader.release_writes();
    tracing::info!(
        "tiered storage: the object store holds nothing of this set; writes and uploads begin"
    );
    true
}

/// The contiguous run of whole segments that ends at the newest.
fn newest_run(entries: &[OffloadEntry], segment_bytes: u64) -> Vec<OffloadEntry> {
    let mut run: Vec<OffloadEntry> = Vec::new();
    for entry in entries.iter().rev() {
        if entry.size != segment_bytes {
            break;
        }
        match run.last() {
            Some(above) if above.start - entry.start != segment_bytes as i64 => break,
            _ => run.push(entry.clone()),
        }
    }
    run.reverse();
    run
}

/// Downloads the run into `staging` (made anew), oldest first; answers the
/// segments kept: those above the newest missing object (remote retention
/// deleted the oldest after the remote manifest was put).
async fn download(
    backend: &Backend,
    run: &[OffloadEntry],
    staging: &Path,
) -> Result<Vec<OffloadEntry>, TierError> {
    clear(staging)?;
    std::fs::create_dir_all(staging).map_err(|e| start_error(staging, e))?;
    let mut kept: Vec<OffloadEntry> = Vec::new();
    for entry in run {
        let path = staging.join(offset_file_name(entry.start));
        match fetch_segment(backend, entry, &path).await {
            Ok(()) => kept.push(entry.clone()),
            Err(Missing::Gone) => {
                for below in kept.drain(..) {
                    let old = staging.join(offset_file_name(below.start));
                    std::fs::remove_file(&old).map_err(|e| start_error(&old, e))?;
                }
            }
            Err(Missing::Failed(why)) => {
                return Err(TierError::Start(format!(
                    "restoring segment {} from {}: {why}",
                    entry.start, backend.describe
                )))
            }
        }
    }
    Ok(kept)
}

enum Missing {
    Gone,
    Failed(String),
}

/// Writes one segment's object to `path`, checking size and CRC32, with
/// the segment's last write as the file's mtime (the local time budget
/// counts from it).
async fn fetch_segment(
    backend: &Backend,
    entry: &OffloadEntry,
    path: &Path,
) -> Result<(), Missing> {
    use std::io::Write;
    let failed = |e: object_store::Error| match e {
        object_store::Error::NotFound { .. } => Missing::Gone,
        e => Missing::Failed(explain(&e)),
    };
    let io = |e: std::io::Error| Missing::Failed(format!("{}: {e}", path.display()));
    let key = ObjectPath::from(entry.key.as_str());
    let mut stream = backend.store.get(&key).await.map_err(failed)?.into_stream();
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    let mut crc = crc32fast::Hasher::new();
    let mut read = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(failed)?;
        read += chunk.len() as u64;
        crc.update(&chunk);
        file.write_all(&chunk).map_err(io)?;
    }
    let got = crc.finalize();
    if read != entry.size || got != entry.crc32 {
        return Err(Missing::Failed(format!(
            "the object {key} does not match the manifest: {read} bytes, CRC32 {got:08x}"
        )));
    }
    let file = file.into_inner().map_err(|e| io(e.into_error()))?;
    let written = SystemTime::UNIX_EPOCH + Duration::from_millis(entry.age_from_ms());
    file.set_modified(written).map_err(io)?;
    file.sync_all().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(start: i64, size: u64) -> OffloadEntry {
        OffloadEntry {
            start,
            size,
            crc32: 0,
            key: format!("commitlog/{start}"),
            uploaded_ms: 1,
            written_ms: 0,
        }
    }

    #[test]
    fn the_run_ending_at_the_newest_segment_is_restored() {
        let starts = |run: Vec<OffloadEntry>| run.iter().map(|e| e.start).collect::<Vec<_>>();
        let entries = [entry(0, 100), entry(200, 100), entry(300, 100)];
        // A hole (retention or a lost upload) ends the run.
        assert_eq!(starts(newest_run(&entries, 100)), vec![200, 300]);
        assert!(newest_run(&[], 100).is_empty());
        // A manifest made with another segment size restores nothing.
        assert!(newest_run(&[entry(0, 50)], 100).is_empty());
        let dir = tempfile::tempdir().unwrap();
        assert!(!has_segments(&dir.path().join("none")).unwrap());
        std::fs::write(dir.path().join("lock"), b"").unwrap();
        assert!(!has_segments(dir.path()).unwrap());
        std::fs::write(dir.path().join(offset_file_name(0)), b"").unwrap();
        assert!(has_segments(dir.path()).unwrap());
    }

    #[test]
    fn a_restore_without_room_is_refused() {
        let run = [entry(0, 800), entry(800, 800)];
        assert_eq!(room_needed(&run, 800), 1600 + 800 + 200);
        let dir = tempfile::tempdir().unwrap();
        // A store root not made yet is measured on its parent.
        let root = dir.path().join("store/root");
        check_room(&root, 4096).unwrap();
        let refused = check_room(&root, u64::MAX).unwrap_err().to_string();
        assert!(
            refused.contains("bytes free and the restore needs"),
            "{refused}"
        );
    }
}
