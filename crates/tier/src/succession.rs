//! A master's first step of its term, after adopting the set's published
//! manifest and before it uploads, publishes or sweeps: the set's history
//! must be in its own manifest. Every segment the published manifest (its
//! predecessor's) names below this master's local start must be named by
//! its own manifest too: it has no local copy of such a segment to upload
//! again, so a manifest published without it would drop it from the set,
//! and the sweep then deletes its object (unnamed, below the local start).
//! A master that did not take such entries (the fork-point rule found no
//! agreement, a copy without a lineage from another epoch, a different
//! segment size) holds: it uploads, publishes and deletes nothing, and its
//! status says why, until an adoption takes them (each pass tries again).

use bytes::Bytes;

use ferrocket_store::tier::{OffloadEntry, Offloaded, TierHandle};
use ferrocket_store::CommitLogReader;

use crate::backend::{explain, Backend};
use crate::follow::Step;

/// [`Step::Done`] when every segment the published manifest names below
/// this master's local start is in its own manifest (or none is
/// published); [`Step::Retry`] while not, or while the published manifest
/// cannot be read (the status says which).
pub(crate) async fn history_taken(
    tier: &TierHandle,
    backend: &Backend,
    reader: &CommitLogReader,
) -> Step {
    let bytes = match published(backend).await {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Step::Done,
        Err(why) => {
            tier.status.set_error(Some(why));
            return Step::Retry;
        }
    };
    // A copy older than one this store adopted or published is no
    // predecessor's (adoption ignores it too).
    let epoch = Offloaded::decode_epoch(&bytes).unwrap_or(0);
    if epoch > 0 && epoch < tier.offloaded.epoch() {
        return Step::Done;
    }
    let entries = match Offloaded::decode(&bytes) {
        Ok(entries) => entries,
        Err(e) => {
            tier.status.set_error(Some(e.to_string()));
            return Step::Retry;
        }
    };
    let local_start = reader.min_offset();
    let missing = untaken(&entries, local_start, |start| tier.offloaded.get(start));
    let (Some(first), Some(last)) = (missing.first(), missing.last()) else {
        return Step::Done;
    };
    let why = format!(
        "holding uploads, publishing and deletes: the replica set's published manifest names \
         {} segments below this master's local start {local_start} (from {first} to {last}) \
         that its own manifest does not (they were not adopted: {}); \
         publishing without them would drop the set's history from object storage",
        missing.len(),
        cause(&entries, &missing, tier.offloaded.segment_bytes()),
    );
    if tier.status.last_error() != why {
        tracing::error!(
            segments = missing.len(),
            first,
            last,
            "tiered storage: {why}"
        );
    }
    tier.status.set_error(Some(why));
    Step::Retry
}

/// Why the `missing` starts of `published` were not adopted, as far as
/// this master can tell: entries of another segment size never are.
fn cause(published: &[OffloadEntry], missing: &[i64], segment_bytes: u64) -> String {
    let other = published
        .iter()
        .find(|entry| entry.size != segment_bytes && missing.contains(&entry.start));
    match other {
        Some(entry) => format!(
            "they are segments of {} bytes, this store's mappedFileSizeCommitLog is \
             {segment_bytes}, and entries of another size are never adopted: set the size they \
             were uploaded with again on every broker of the set",
            entry.size
        ),
        None => "see earlier messages".to_string(),
    }
}

/// The published manifest's bytes (`None`: none published).
async fn published(backend: &Backend) -> Result<Option<Bytes>, String> {
    let got = match backend.store.get(&backend.manifest_key()).await {
        Ok(got) => got,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(explain(&e)),
    };
    got.bytes().await.map(Some).map_err(|e| explain(&e))
}

/// The starts of `published` entries that lie wholly below `local_start`
/// and that `own` (this master's manifest) does not name.
fn untaken(
    published: &[OffloadEntry],
    local_start: i64,
    own: impl Fn(i64) -> Option<OffloadEntry>,
) -> Vec<i64> {
    published
        .iter()
        .filter(|entry| entry.start.saturating_add(entry.size as i64) <= local_start)
        .filter(|entry| own(entry.start).is_none())
        .map(|entry| entry.start)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(start: i64, size: u64) -> OffloadEntry {
        OffloadEntry {
            start,
            size,
            crc32: 0,
            key: format!("k/{start}"),
            uploaded_ms: 1,
            written_ms: 0,
        }
    }

    #[test]
    fn only_what_lies_below_the_local_start_and_is_not_named_counts() {
        let published = [entry(0, 100), entry(100, 100), entry(200, 100)];
        let own = |start: i64| (start == 100).then(|| entry(100, 100));
        // 200 reaches the local start: this master holds it locally.
        assert_eq!(untaken(&published, 250, own), vec![0]);
        assert_eq!(untaken(&published, 300, own), vec![0, 200]);
        assert!(untaken(&published, 50, own).is_empty());
        // Another segment size: still history this master lacks.
        assert_eq!(untaken(&[entry(0, 50)], 100, |_| None), vec![0]);
    }

    #[test]
    fn the_cause_names_another_segment_size() {
        let published = [entry(0, 50), entry(50, 50)];
        let said = cause(&published, &[0, 50], 100);
        assert!(said.contains("segments of 50 bytes"), "{said}");
        assert!(said.contains("mappedFileSizeCommitLog is 100"), "{said}");
        let same = [entry(0, 100)];
        assert_eq!(cause(&same, &[0], 100), "see earlier messages");
    }
}
