//! Feeding the message index (RocketMQ's `IndexService` dispatch): one
//! scanner on the timer shard reads every CommitLog record once, in
//! CommitLog order, and indexes its UNIQ_KEY and each KEYS entry under
//! `topic#key`. It resumes after the newest indexed record, so after a
//! restart it re-reads what the index had not yet taken (the index ignores
//! records at or before its newest one, so re-reading is harmless).
//!
//! The scan follows the written (readable) end of the CommitLog: entries
//! for records a crash later loses are dropped by `truncate_from` at the
//! next start.

use std::cell::{Cell, RefCell};
use std::path::Path;

use ferrocket_protocol::properties::{self, KEYS, UNIQ_KEY};
use ferrocket_protocol::record::{index_fields, peek_record, RecordPeek};
use ferrocket_store::index::{index_dir, message_index_keys, IndexConfig, IndexService};

use ferrocket_store::ShardStore;

/// Messages returned for a unique-key query (`defaultQueryMaxNum`).
pub const QUERY_COUNT_DEFAULT: usize = 32;
/// Records indexed per step before the scanner yields to other work.
pub const SCAN_RECORDS_PER_STEP: usize = 4096;
/// How often the scanner looks for new records when nothing woke it.
pub const SCAN_INTERVAL_MS: u64 = 20;
/// How often written index pages are synced to disk.
pub const INDEX_FLUSH_INTERVAL_MS: u64 = 1_000;
/// Bytes read to learn a record's size.
const HEAD_BYTES: usize = 8;
/// Bytes the scanner reads at once: many records per read.
const WINDOW_BYTES_MAX: usize = 256 * 1024;

/// End of the tier's read-through chunk holding `pos` when `pos` is
/// offloaded (at least a record head past `pos`): the most one cached read
/// there is sure to return.
fn offloaded_chunk_end(reader: &ferrocket_store::CommitLogReader, pos: i64) -> Option<i64> {
    let tier = reader.tier()?;
    reader.is_offloaded(pos).then(|| {
        let (start, len) = tier.chunk_at(pos);
        (start + len as i64).max(pos + HEAD_BYTES as i64)
    })
}

/// Where a window's scan stopped, and how many records it indexed.
struct Scanned {
    next: i64,
    records: usize,
}

/// The index and the scanner's position.
pub(crate) struct IndexFeed {
    index: RefCell<IndexService>,
    /// Next CommitLog position to read.
    next: Cell<i64>,
    /// An offloaded range the scanner waits on (not in the tier's cache):
    /// fetched before the next step.
    wanted: Cell<Option<(i64, usize)>>,
    /// The last range fetched: wanted again at once, the cache cannot
    /// hold it (the rest of its segment is skipped).
    fetched: Cell<Option<(i64, usize)>>,
    /// One catch-up at a time (the scanner's loop and a query's): the
    /// fetch of an offloaded range is awaited in between.
    catching_up: glommio::sync::Semaphore,
}

impl IndexFeed {
    /// Opens the index under the store root, drops entries past the
    /// recovered CommitLog end, and finds where scanning resumes.
    pub fn open(root: &Path, store: &ShardStore) -> Result<Self, String> {
        let mut index = IndexService::open(index_dir(root), IndexConfig::default())
            .map_err(|err| format!("message index: {err}"))?;
        let reader = store.reader();
        let end = reader.written_offset();
        let dropped = index
            .truncate_from(end)
            .map_err(|err| format!("message index: {err}"))?;
        if dropped > 0 {
            tracing::warn!(dropped, end, "index entries past the CommitLog end dropped");
        }
        let next = match index.last_indexed_offset() {
            Some(last) => match crate::services::records::read_record(store, last) {
                Some(record) => last + record.len() as i64,
                None => last,
            },
            // Offloaded records too (a store restored from the object
            // store, or an index rebuilt, covers them).
            None => reader.logical_min_offset(),
        };
        tracing::info!(resume_at = next, end, "message index opened");
        Ok(Self {
            index: RefCell::new(index),
            next: Cell::new(next.max(reader.logical_min_offset())),
            wanted: Cell::new(None),
            fetched: Cell::new(None),
            catching_up: glommio::sync::Semaphore::new(1),
        })
    }

    /// Indexes up to `budget` records written since the last call; returns
    /// whether it reached the written end. Records are read a window at a
    /// time (one read for many records, never past a segment's end or into
    /// a quarantined range).
    pub fn step(&self, store: &ShardStore, budget: usize) -> bool {
        let reader = store.reader();
        let end = reader.written_offset();
        let mut pos = self.next.get();
        let mut done = 0;
        while pos < end && done < budget {
            if let Some(range) = reader.damaged_range_at(pos) {
                // Quarantined by recovery: no record in it is indexed.
                pos = range.end;
                continue;
            }
            let segment_end = reader.next_segment_start(pos);
            let chunk_end = offloaded_chunk_end(&reader, pos);
            let window_end = [end, segment_end, pos + WINDOW_BYTES_MAX as i64]
                .into_iter()
                .chain(reader.next_damage_start(pos))
                .chain(chunk_end)
                .min()
                .unwrap_or(end);
            let read = store.read_records(pos, (window_end - pos) as usize);
            if read.is_none() && chunk_end.is_some() {
                // Offloaded and not cached: fetched first (`catch_up`).
                self.wanted.set(Some((pos, (window_end - pos) as usize)));
                break;
            }
            let Some(window) = read else {
                // Past a segment's end without a blank: next segment.
                pos = segment_end;
                continue;
            };
            let scanned = self.index_window(store, &window, pos, budget - done);
            if self.wanted.get().is_some() {
                // An offloaded record across the tier's chunks.
                pos = scanned.next;
                break;
            }
            if scanned.next == pos {
                // Less than a record head before the window's end: a
                // segment's unusable tail or a quarantined range is skipped;
                // at the written end, wait for more.
                if window_end == end {
                    break;
                }
                pos = window_end;
                continue;
            }
            assert!(scanned.next > pos, "the index scanner must move forward");
            pos = scanned.next;
            done += scanned.records;
        }
        self.next.set(pos);
        pos >= end
    }

    /// Indexes up to `budget` whole records at the front of `window` (read
    /// at CommitLog position `base`).
    fn index_window(&self, store: &ShardStore, window: &[u8], base: i64, budget: usize) -> Scanned {
        let mut at = 0;
        let mut records = 0;
        while records < budget && at + HEAD_BYTES <= window.len() {
            let pos = base + at as i64;
            match peek_record(&window[at..]) {
                Ok(RecordPeek::Message { total_size, .. }) => {
                    match window.get(at..at + total_size) {
                        Some(record) => self.index_record(record, pos),
                        // Cut by the window: read again from here, alone
                        // when it is the first (larger than a window).
                        None if at > 0 => break,
                        None => match store.read_records(pos, total_size) {
                            Some(record) => self.index_record(&record, pos),
                            None if store.reader().is_offloaded(pos) => {
                                self.wanted.set(Some((pos, total_size)));
                                break;
                            }
                            None => {}
                        },
                    }
                    at += total_size;
                    records += 1;
                }
                found => {
                    if !matches!(found, Ok(RecordPeek::Blank { .. })) {
                        tracing::error!(
                            pos,
                            "index scanner found no record outside the quarantined ranges; \
                             skipping to the next segment"
                        );
                    }
                    let next = store.reader().next_segment_start(pos);
                    return Scanned { next, records };
                }
            }
        }
        Scanned {
            next: base + at as i64,
            records,
        }
    }

    /// Indexes one whole record's UNIQ_KEY and KEYS, reading the two
    /// properties in place.
    fn index_record(&self, bytes: &[u8], pos: i64) {
        let Ok(record) = index_fields(bytes) else {
            tracing::warn!(pos, "index scanner skipped an undecodable record");
            return;
        };
        let [keys_property, uniq_key] = properties::find_each(record.properties, [KEYS, UNIQ_KEY]);
        let keys = message_index_keys(keys_property.as_deref(), uniq_key.as_deref());
        if keys.is_empty() {
            return;
        }
        let put = self
            .index
            .borrow_mut()
            .put(record.topic, &keys, pos, record.store_timestamp_ms);
        if let Err(err) = put {
            tracing::error!(pos, %err, "indexing a message failed");
        }
    }

    /// Indexes everything written so far (yielding between steps).
    pub async fn catch_up(&self, store: &ShardStore) {
        // Never closed: always a permit.
        let _turn = self.catching_up.acquire_permit(1).await;
        while !self.step(store, SCAN_RECORDS_PER_STEP) {
            if let Some(range) = self.wanted.take() {
                self.fetch_offloaded(store, range).await;
            }
            glommio::executor().yield_if_needed().await;
        }
        self.fetched.set(None);
    }

    /// Brings an offloaded range into the tier's cache. When the object
    /// store fails, or the cache cannot hold the range, the rest of that
    /// segment is not indexed (logged), so new records are not held up.
    async fn fetch_offloaded(&self, store: &ShardStore, (pos, len): (i64, usize)) {
        let again = self.fetched.replace(Some((pos, len))) == Some((pos, len));
        let failed = match again {
            true => Some("the read-through cache cannot hold it".to_string()),
            false => store
                .fetch_offloaded(pos, len)
                .await
                .err()
                .map(|e| e.to_string()),
        };
        if let Some(err) = failed {
            let next = store.reader().next_segment_start(pos);
            tracing::warn!(pos, next, %err,
                "index scanner: an offloaded range could not be read; its keys are not indexed");
            self.next.set(next);
            self.fetched.set(None);
        }
    }

    /// CommitLog offsets of candidates for `topic#key` (see
    /// [`IndexService::query`]) and the index's last update.
    pub fn query(
        &self,
        topic: &str,
        key: &str,
        max: usize,
        begin_ms: i64,
        end_ms: i64,
    ) -> (Vec<i64>, (i64, i64)) {
        let index = self.index.borrow();
        (
            index.query(topic, key, max, begin_ms, end_ms),
            index.last_update(),
        )
    }

    /// Retention: drops index files that point only below the CommitLog's
    /// start (its old segments were deleted).
    pub fn delete_expired(&self, commitlog_min: i64) {
        match self.index.borrow_mut().delete_below(commitlog_min) {
            Ok(0) => {}
            Ok(deleted) => tracing::info!(deleted, commitlog_min, "index retention deleted files"),
            Err(err) => tracing::error!(%err, "index retention failed"),
        }
    }

    /// Syncs written index pages (on the blocking pool).
    pub async fn flush(&self) {
        let files = match self.index.borrow_mut().take_dirty_files() {
            Ok(files) => files,
            Err(err) => {
                tracing::error!(%err, "index flush failed");
                return;
            }
        };
        if files.is_empty() {
            return;
        }
        let synced = glommio::executor()
            .spawn_blocking(move || {
                for file in files {
                    file.sync_data()?;
                }
                Ok::<(), std::io::Error>(())
            })
            .await;
        if let Err(err) = synced {
            tracing::error!(%err, "syncing index files failed");
        }
    }
}
