//! Recall markers on the delivery side (`services::recall` stores them).
//!
//! A marker is due one millisecond before the message it recalls, so the
//! timer hands it out first (due order is `(deliver_at_ms, offset)`).
//! Delivery then **holds** it: remembers its delete key and leaves it
//! unmarked in the timer store, so a restart hands it out again. When the
//! message named comes due it is dropped, and it and its marker are marked
//! delivered together. A marker whose message does not come (recalled
//! twice, already delivered, never existed) is released once every timer
//! due at its message's time has been handed out.
//!
//! Held markers come back in every `due` batch until released: delivery
//! asks for that many more timers and skips them. At most
//! [`HELD_MAX`] are held; past that a marker is still matched but marked
//! delivered at once (a restart before its message is due forgets it).

use std::collections::{HashMap, HashSet};

use ferrocket_store::timer::TimerEntry;

/// Markers held unmarked at most.
pub(super) const HELD_MAX: usize = 16_384;

/// One marker's recall.
struct Recall {
    /// The marker, while held unmarked.
    marker: Option<TimerEntry>,
    /// When the recalled message is due (the marker's TIMER_OUT_MS).
    target_ms: i64,
}

/// What became of a marker handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hold {
    /// Held unmarked until its message comes or cannot come.
    Held,
    /// Matched from memory only, or redundant: mark it delivered now.
    Settle,
}

/// The markers delivery knows, by delete key (`REAL_TOPIC+UNIQ_KEY`).
#[derive(Default)]
pub(super) struct Recalls {
    by_key: HashMap<String, Recall>,
    /// Offsets of the held markers.
    held: HashSet<i64>,
}

impl Recalls {
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// Markers held unmarked (they come back in each `due` batch).
    pub fn held_count(&self) -> usize {
        self.held.len()
    }

    pub fn is_held(&self, physical_offset: i64) -> bool {
        self.held.contains(&physical_offset)
    }

    /// Takes `marker`, recalling `key` due at `target_ms`.
    pub fn hold(&mut self, marker: TimerEntry, key: &str, target_ms: i64) -> Hold {
        if self.by_key.contains_key(key) {
            return Hold::Settle;
        }
        let room = self.held.len() < HELD_MAX;
        if room {
            self.held.insert(marker.physical_offset);
        }
        self.by_key.insert(
            key.to_string(),
            Recall {
                marker: room.then_some(marker),
                target_ms,
            },
        );
        if room {
            Hold::Held
        } else {
            Hold::Settle
        }
    }

    /// Whether `key` is recalled; the marker to mark delivered with the
    /// message, if it was held.
    pub fn take(&mut self, key: &str) -> Option<Option<TimerEntry>> {
        let recall = self.by_key.remove(key)?;
        if let Some(marker) = &recall.marker {
            self.held.remove(&marker.physical_offset);
        }
        Some(recall.marker)
    }

    /// Forgets the recalls whose message would have been handed out by now
    /// (every timer due at or before `covered_ms` has been); answers the
    /// held markers among them, to mark delivered.
    pub fn expire(&mut self, covered_ms: i64) -> Vec<TimerEntry> {
        let mut released = Vec::new();
        self.by_key.retain(|_, recall| {
            if recall.target_ms > covered_ms {
                return true;
            }
            released.extend(recall.marker);
            false
        });
        for marker in &released {
            self.held.remove(&marker.physical_offset);
        }
        released
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(deliver_at_ms: i64, physical_offset: i64) -> TimerEntry {
        TimerEntry {
            deliver_at_ms,
            physical_offset,
            size: 100,
            maybe_delivered: false,
        }
    }

    #[test]
    fn a_held_marker_is_released_with_its_message() {
        let mut recalls = Recalls::default();
        assert_eq!(recalls.hold(entry(999, 500), "T+ID", 1_000), Hold::Held);
        assert!(recalls.is_held(500));
        assert_eq!(recalls.hold(entry(999, 600), "T+ID", 1_000), Hold::Settle);
        assert_eq!(recalls.take("T+X"), None);
        assert_eq!(recalls.take("T+ID"), Some(Some(entry(999, 500))));
        assert!(recalls.is_empty() && recalls.held_count() == 0);
    }

    #[test]
    fn a_marker_whose_message_cannot_come_is_released() {
        let mut recalls = Recalls::default();
        recalls.hold(entry(999, 500), "T+A", 1_000);
        recalls.hold(entry(1_999, 600), "T+B", 2_000);
        assert!(recalls.expire(999).is_empty());
        assert_eq!(recalls.expire(1_000), vec![entry(999, 500)]);
        assert_eq!(recalls.held_count(), 1);
        assert_eq!(recalls.take("T+A"), None);
        assert_eq!(recalls.expire(5_000), vec![entry(1_999, 600)]);
        assert!(recalls.is_empty());
    }

    #[test]
    fn past_the_limit_markers_are_matched_from_memory() {
        let mut recalls = Recalls::default();
        for i in 0..HELD_MAX as i64 {
            assert_eq!(recalls.hold(entry(9, i), &format!("T+{i}"), 10), Hold::Held);
        }
        let extra = entry(9, HELD_MAX as i64);
        assert_eq!(recalls.hold(extra, "T+extra", 10), Hold::Settle);
        assert_eq!(recalls.held_count(), HELD_MAX);
        assert_eq!(recalls.take("T+extra"), Some(None));
    }
}
