//! Where a master starts copying its log to a slave with an empty store
//! (controller mode): its logical start, offloaded segments included
//! (served from object storage, `frame_body`), but past any offloaded
//! segment object storage does not serve now (its object expired by a
//! bucket lifecycle rule, deleted, unreadable, or the store down): such a
//! segment would fail the link at its first frame, and the slave's next
//! link would start there again, forever. A slave with an empty store takes
//! whatever offset the first frame carries (`Intake::check`), so starting
//! higher only leaves the skipped history out of its local copy (the set's
//! published manifest still names it, and the slave adopts that).

use std::time::{Duration, Instant};

use super::{frame_body, frame_end};
use crate::shard::Shard;

/// The first offset an empty slave's copy starts at: the master's logical
/// start, or the start of the first offloaded segment above it whose first
/// frame can be read now, or the local start. Probing stops after a
/// quarter of `haHousekeepingInterval` (the slave's wait for frames) and
/// goes on from the local start. What was skipped is logged.
pub(crate) async fn empty_slave_start(shard: &Shard) -> i64 {
    let reader = shard.store().reader();
    let segment = reader.segment_bytes() as i64;
    let budget = Duration::from_millis(shard.config().replication.ha_housekeeping_interval_ms / 4);
    let began = Instant::now();
    let logical = reader.logical_min_offset();
    let mut start = logical;
    let mut why = String::new();
    while start < reader.min_offset() {
        if began.elapsed() >= budget {
            why = format!("probing object storage took over {budget:?}; {why}");
            start = reader.min_offset();
            break;
        }
        let end = frame_end(shard, start, reader.written_offset(), i64::MAX);
        match frame_body(shard, start, end).await {
            Ok(_) => break,
            Err(e) => {
                why = e.to_string();
                start = start - start.rem_euclid(segment) + segment;
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
            "HA: an empty slave's copy skipped offloaded CommitLog bytes object storage does not \
             serve now; it starts at {start} (the set's manifest still names what remains remote)"
        );
    }
    start
}
