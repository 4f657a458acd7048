//! Remote retention: which offloaded segments leave object storage.
//! A segment goes, oldest first, when it is no longer local and either
//! older than `tieredStoreFileReservedTime` (unless a topic whose
//! `retention.ms` outlives it still keeps it: [`Needs::keep_remote`]) or wholly
//! below what every queue still reads ([`Needs::needed`], retention per
//! topic). The tier thread forgets them in the manifest first
//! ([`super::Offloaded::forget`]), then deletes the objects; the CommitLog's
//! logical start ([`crate::CommitLogReader::logical_min_offset`]) moves up
//! with the manifest, and the shards' queue retention moves the queues'
//! min offsets past it.

use super::OffloadEntry;
use crate::topic_retention::Needs;

/// At most this many segments leave object storage per pass.
pub const REMOTE_DELETE_PER_PASS_MAX: usize = 16;

/// What a remote retention pass looks at.
pub(crate) struct RemoteView<'a> {
    /// Recorded copies, oldest first.
    pub(crate) entries: &'a [OffloadEntry],
    pub(crate) segment_bytes: i64,
    /// Start of the first local segment.
    pub(crate) local_min: i64,
    /// `tieredStoreFileReservedTime` in ms; 0: no age limit.
    pub(crate) reserved_ms: u64,
    pub(crate) now_ms: u64,
}

/// The front run of `view.entries` that goes (`needs`: what the shards'
/// queues need; `None`, not known yet: nothing goes).
pub(crate) fn expired(view: &RemoteView<'_>, needs: Option<Needs>) -> Vec<OffloadEntry> {
    let Some(needs) = needs else {
        return Vec::new();
    };
    let goes = |entry: &OffloadEntry| {
        let end = entry.start + view.segment_bytes;
        if end > view.local_min || end > needs.pinned {
            return false;
        }
        let age = view.now_ms.saturating_sub(entry.age_from_ms());
        let too_old = view.reserved_ms > 0 && age >= view.reserved_ms && end <= needs.keep_remote;
        too_old || end <= needs.needed
    };
    view.entries
        .iter()
        .take_while(|entry| goes(entry))
        .take(REMOTE_DELETE_PER_PASS_MAX)
        .cloned()
        .collect()
}

impl crate::CommitLogReader {
    /// The offloaded segments remote retention deletes now (oldest first;
    /// empty without tiering). The caller forgets them, then deletes them.
    pub fn remote_expired(&self, now_ms: u64) -> Vec<OffloadEntry> {
        let Some(tier) = self.shared.tier.get() else {
            return Vec::new();
        };
        let entries = tier.offloaded.entries();
        let view = RemoteView {
            entries: &entries,
            segment_bytes: self.shared.segment_bytes as i64,
            local_min: self.shared.min_offset(),
            reserved_ms: tier.config.remote_reserved_ms,
            now_ms,
        };
        expired(&view, self.shared.topic_keep.lowest_all())
    }

    /// Sealed local segments (every one but the active segment, flushed or
    /// not yet) with no verified remote copy recorded in the manifest,
    /// counted now: a segment sealed since the uploader's last pass is
    /// pending too. `None` without tiering.
    pub fn tier_pending_segments(&self) -> Option<u64> {
        let tier = self.shared.tier.get()?;
        let list = self.shared.segment_list();
        let sealed = list.len().saturating_sub(1);
        let pending = list[..sealed]
            .iter()
            .filter(|segment| !tier.offloaded.may_drop_locally(segment.start))
            .count();
        Some(pending as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(start: i64, written_ms: u64) -> OffloadEntry {
        OffloadEntry {
            start,
            size: 100,
            crc32: 0,
            key: format!("k/{start}"),
            uploaded_ms: written_ms + 5,
            written_ms,
        }
    }

    fn needs(keep: i64, needed: i64) -> Option<Needs> {
        Some(Needs {
            keep: i64::MIN,
            keep_remote: keep,
            needed,
            pinned: i64::MAX,
        })
    }

    #[test]
    fn old_remote_segments_go_oldest_first_unless_kept() {
        let entries = [
            entry(0, 10),
            entry(100, 20),
            entry(200, 900),
            entry(300, 10),
        ];
        let view = RemoteView {
            entries: &entries,
            segment_bytes: 100,
            local_min: 300,
            reserved_ms: 500,
            now_ms: 1000,
        };
        let starts =
            |needs| -> Vec<i64> { expired(&view, needs).iter().map(|e| e.start).collect() };
        // By age: 0 and 100; 200 is young; 300 is local.
        assert_eq!(starts(needs(i64::MAX, i64::MIN)), [0, 100]);
        // A topic's longer retention.ms keeps from 150 on.
        assert_eq!(starts(needs(150, i64::MIN)), [0]);
        // Unknown needs: nothing.
        assert!(starts(None).is_empty());
        // Wholly below what every queue reads: young ones go too, not local ones.
        assert_eq!(starts(needs(0, 1000)), [0, 100, 200]);
        let forever = RemoteView {
            reserved_ms: 0,
            ..view
        };
        assert!(expired(&forever, needs(i64::MAX, i64::MIN)).is_empty());
    }
}
