//! The publisher's lineage on the set's published manifest (controller
//! mode): its epoch list (from its epoch file) over the range its entries
//! cover, and where that range ends. An adopter takes only the entries
//! that end at or below the last point where its own log and the
//! publisher's hold the same bytes (the fork-point rule of RocketMQ's
//! `EpochFileCache.findLastConsistentPoint`): a deposed master's copy of a
//! segment that lies past the fork between the two logs is never taken,
//! whatever epoch it was published under.

use serde::{Deserialize, Serialize};

use crate::epoch::{EpochCache, EpochEntry};

/// One `(epoch, start offset)` entry of the publisher's epoch file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LineageEpoch {
    pub epoch: i32,
    pub start_offset: i64,
}

/// The publisher's epochs, oldest first, over `[0, end)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lineage {
    pub epochs: Vec<LineageEpoch>,
    /// The end of what the manifest names (the last entry's end): the
    /// publisher's log reaches at least there, and every entry ends at or
    /// below it. Epochs starting past it are left out.
    pub end: i64,
}

impl Lineage {
    /// The lineage of a publisher with `epochs` whose entries end at `end`.
    pub fn of(epochs: &EpochCache, end: i64) -> Self {
        let epochs = epochs
            .entries()
            .iter()
            .filter(|e| e.start_offset <= end)
            .map(|e| LineageEpoch {
                epoch: e.epoch,
                start_offset: e.start_offset,
            })
            .collect();
        Self { epochs, end }
    }

    /// The epochs as a checked list (`None`: out of order, or negative:
    /// a damaged file, from which nothing is taken).
    fn checked(&self) -> Option<Vec<EpochEntry>> {
        let entries: Vec<EpochEntry> = self
            .epochs
            .iter()
            .map(|e| EpochEntry {
                epoch: e.epoch,
                start_offset: e.start_offset,
            })
            .collect();
        EpochCache::from_entries(&entries).ok()?;
        (self.end >= 0).then_some(entries)
    }
}

/// Each entry with where it ends: the next one's start, or `end` for the
/// newest.
fn spans(entries: &[EpochEntry], end: i64) -> Vec<(EpochEntry, i64)> {
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| (*e, entries.get(i + 1).map_or(end, |next| next.start_offset)))
        .collect()
}

/// The last CommitLog position below which a log of `own` epochs ending at
/// `own_end` and the publisher's (`published`) hold the same bytes: the
/// newest epoch both lists hold with the same start, up to the nearer of
/// its two ends. 0 when they share no such epoch (nothing can be trusted).
pub fn consistent_point(own: &EpochCache, own_end: i64, published: &Lineage) -> i64 {
    let Some(theirs) = published.checked() else {
        return 0;
    };
    let theirs = spans(&theirs, published.end);
    let point = spans(own.entries(), own_end)
        .into_iter()
        .rev()
        .find_map(|(mine, mine_end)| {
            let (_, their_end) = theirs.iter().find(|(t, _)| *t == mine)?;
            Some(mine_end.min(*their_end))
        })
        .unwrap_or(0);
    point.min(own_end).min(published.end).max(0)
}

/// How far an adopter whose epochs are `own` and whose log ends at
/// `own_end` may take a published manifest of `epoch` carrying `lineage`:
/// up to the consistent point with the publisher's lineage. Without one:
/// up to `own_end` outside controller mode (epoch 0); a copy of epoch
/// E > 0 without a lineage (published by a Ferrocket before lineages)
/// could be a deposed master's copy past the fork, so it is taken only as
/// far as this log holds epoch E's bytes (they came from E's master, and
/// below them the two logs agree: the fork-point cut before following
/// it), and not at all (`None`) when this log holds no bytes of epoch E.
pub fn agreed_point(
    own: &EpochCache,
    own_end: i64,
    epoch: i32,
    lineage: Option<&Lineage>,
) -> Option<i64> {
    if let Some(lineage) = lineage {
        return Some(consistent_point(own, own_end, lineage).min(own_end));
    }
    if epoch <= 0 {
        return Some(own_end);
    }
    let entries = own.entries();
    let at = entries.iter().position(|e| e.epoch == epoch)?;
    let span_end = entries
        .get(at + 1)
        .map_or(own_end, |next| next.start_offset);
    (span_end > entries[at].start_offset).then_some(span_end.min(own_end))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tier::test_epochs as cache;

    #[test]
    fn the_point_is_where_the_newest_shared_epoch_ends_first() {
        let zombie = Lineage::of(&cache(&[(1, 0), (4, 100)]), 400);
        // A new master of epoch 5 whose log forked from the zombie's at 150.
        let new = cache(&[(1, 0), (4, 100), (5, 150)]);
        assert_eq!(consistent_point(&new, 600, &zombie), 150);
        // The same list: as far as both reach.
        let same = cache(&[(1, 0), (4, 100)]);
        assert_eq!(consistent_point(&same, 300, &zombie), 300);
        assert_eq!(consistent_point(&same, 900, &zombie), 400);
        // Epoch 4 started elsewhere here: only epoch 1 is shared.
        let other = cache(&[(1, 0), (4, 120)]);
        assert_eq!(consistent_point(&other, 900, &zombie), 100);
        // Nothing shared, no epochs, or a damaged list: nothing.
        assert_eq!(consistent_point(&cache(&[(2, 0)]), 900, &zombie), 0);
        assert_eq!(consistent_point(&EpochCache::new(), 900, &zombie), 0);
        let mut damaged = zombie.clone();
        damaged.epochs.reverse();
        assert_eq!(consistent_point(&same, 900, &damaged), 0);
        // Epochs past the entries' end are left out of a lineage.
        assert_eq!(Lineage::of(&new, 120).epochs.len(), 2);
    }

    /// A copy without a lineage: outside controller mode up to the end; of
    /// epoch 4, as far as this log holds epoch 4's bytes; of an epoch this
    /// log holds no bytes of, nothing.
    #[test]
    fn a_copy_without_a_lineage_is_taken_only_within_its_epoch() {
        let new = cache(&[(1, 0), (4, 100), (5, 150)]);
        assert_eq!(agreed_point(&new, 600, 0, None), Some(600));
        assert_eq!(agreed_point(&new, 600, 4, None), Some(150));
        assert_eq!(agreed_point(&new, 600, 5, None), Some(600));
        assert_eq!(agreed_point(&new, 120, 4, None), Some(120));
        assert_eq!(agreed_point(&new, 600, 3, None), None);
        assert_eq!(agreed_point(&new, 600, 6, None), None);
        assert_eq!(agreed_point(&EpochCache::new(), 600, 2, None), None);
        // Epoch 5 began where this log ends: no bytes of it.
        assert_eq!(agreed_point(&new, 150, 5, None), None);
        let zombie = Lineage::of(&cache(&[(1, 0), (4, 100)]), 400);
        assert_eq!(agreed_point(&new, 600, 4, Some(&zombie)), Some(150));
    }
}
