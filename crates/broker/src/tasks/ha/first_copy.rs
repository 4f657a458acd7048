//! Where a master starts copying its log to a slave with an empty store
//! (controller mode): its logical start, offloaded segments included
//! (served from object storage, `frame_body`), but past any offloaded
//! segment whose object is definitely gone: object storage answered not
//! found (a bucket lifecycle rule, an operator), or the object is shorter
//! than the segment. Such a segment would fail the link at its first frame,
//! and the slave's next link would start there again, forever. A slave with
//! an empty store takes whatever offset the first frame carries
//! (`Intake::check`), so starting higher only leaves the skipped history
//! out of its local copy.
//!
//! Nothing else skips a segment: not a store that is down, slow, answers
//! 5xx or refuses, nor a probe that runs out of time. This master may have
//! dropped a segment once its upload was in its own manifest, before that
//! manifest was published; a slave that started past it would join the
//! in-sync set without it, and after a failover the new master would
//! publish without it and sweep its object. So the copy starts at the
//! first segment not proved gone, and the link fails and retries there
//! until object storage serves it.

use std::io;
use std::time::{Duration, Instant};

use super::{frame_body, frame_end, within};
use crate::shard::Shard;

/// The first offset an empty slave's copy starts at: the master's logical
/// start, or the start of the first offloaded segment above it that is not
/// definitely gone (`NotFound` from `frame_body`). Probing is bounded by a
/// quarter of `haHousekeepingInterval` (the slave's wait for frames), each
/// probe included; a probe that errs otherwise or runs out of that time
/// stops it where it is. What was skipped is logged.
pub(crate) async fn empty_slave_start(shard: &Shard) -> i64 {
    let reader = shard.store().reader();
    let segment = reader.segment_bytes() as i64;
    let budget = Duration::from_millis(shard.config().replication.ha_housekeeping_interval_ms / 4);
    let began = Instant::now();
    let logical = reader.logical_min_offset();
    let mut start = logical;
    let mut why = String::new();
    while start < reader.min_offset() {
        let left = budget.saturating_sub(began.elapsed()).as_millis() as u64;
        let end = frame_end(shard, start, reader.written_offset(), i64::MAX);
        let probe = within(
            left,
            "probing an offloaded segment",
            frame_body(shard, start, end),
        );
        match probe.await {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                why = e.to_string();
                start = start - start.rem_euclid(segment) + segment;
            }
            Ok(_) => break,
            Err(e) => {
                tracing::info!(offset = start, error = %e,
                    "HA: an empty slave's copy starts at an offloaded segment not proved gone");
                break;
            }
        }
    }
    assert!(
        start >= logical,
        "an empty slave's copy starts at or above the log's start"
    );
    if start > logical {
        tracing::warn!(
            skipped_from = logical,
            skipped_to = start,
            first_skipped_segment = %ferrocket_store::offset_file_name(logical),
            error = %why,
            "HA: an empty slave's copy skipped offloaded CommitLog bytes whose objects are gone \
             from object storage; it starts at {start}"
        );
    }
    start
}
