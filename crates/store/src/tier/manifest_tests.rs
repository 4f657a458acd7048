//! Tests of the tier manifest: adoption, lineages, epochs.

use super::*;

fn none() -> EpochCache {
    EpochCache::new()
}

use crate::tier::test_epochs as epochs;

fn entry(start: i64) -> OffloadEntry {
    OffloadEntry {
        start,
        size: 100,
        crc32: 7,
        key: format!("k/{start}"),
        uploaded_ms: 1,
        written_ms: 0,
    }
}

#[test]
fn records_survive_reload_and_floor_is_contiguous() {
    let dir = tempfile::tempdir().unwrap();
    let m = Offloaded::load(dir.path(), 100).unwrap();
    assert!(!m.may_drop_locally(0));
    assert_eq!(m.remote_floor(300), None);
    m.record(entry(100)).unwrap();
    m.record(entry(200)).unwrap();
    let m = Offloaded::load(dir.path(), 100).unwrap();
    assert!(m.may_drop_locally(100) && m.may_drop_locally(200) && !m.may_drop_locally(0));
    assert_eq!(m.remote_floor(300), Some(100));
    // A hole stops the run.
    m.record(entry(400)).unwrap();
    assert_eq!(m.remote_floor(500), Some(400));
    assert_eq!(m.get(400).unwrap().crc32, 7);
    // A cut at 450 forgets the copy of [400, 500), durably.
    assert_eq!(m.forget_from(450).unwrap().len(), 1);
    assert!(m.forget_from(450).unwrap().is_empty());
    assert!(Offloaded::load(dir.path(), 100).unwrap().get(400).is_none());
    // A replica takes a published manifest, up to its own end.
    let other = tempfile::tempdir().unwrap();
    let replica = Offloaded::load(other.path(), 100).unwrap();
    assert_eq!(
        replica
            .adopt(&m.encode(0, &none()).unwrap(), 300, &none(), 0, false)
            .unwrap(),
        Adopted::Changed
    );
    assert_eq!(replica.entries().len(), 2);
    assert_eq!(
        replica
            .adopt(&m.encode(0, &none()).unwrap(), 300, &none(), 0, false)
            .unwrap(),
        Adopted::Same
    );
    assert_eq!(
        replica
            .adopt(&m.encode(0, &none()).unwrap(), 250, &none(), 0, false)
            .unwrap(),
        Adopted::Changed
    );
    assert_eq!(replica.entries().len(), 1);
    // A master keeps its own entries (recorded, not yet published).
    replica.record(entry(0)).unwrap();
    replica
        .adopt(&m.encode(0, &none()).unwrap(), 300, &none(), 0, true)
        .unwrap();
    assert_eq!(replica.entries().len(), 3);
    let published = Offloaded::decode(&m.encode(0, &none()).unwrap()).unwrap();
    assert_eq!(published, m.entries());
    replica
        .adopt(&m.encode(0, &none()).unwrap(), 300, &none(), 0, false)
        .unwrap();
    assert!(replica.get(0).is_none());
    m.forget(&[100, 200]).unwrap();
    let m = Offloaded::load(dir.path(), 100).unwrap();
    assert!(m.is_empty());
    assert_eq!(m.remote_floor(300), None);
}

/// The published manifests of a set in controller mode: `entries` of
/// segment starts, published under `epoch` by a master whose epochs
/// began at 0.
fn published(epoch: i32, starts: &[i64]) -> Vec<u8> {
    published_by(epoch, &[(epoch, 0)], starts)
}

#[test]
fn an_older_epoch_is_ignored_and_the_highest_seen_kept() {
    let dir = tempfile::tempdir().unwrap();
    let slave = Offloaded::load(dir.path(), 100).unwrap();
    assert_eq!(Offloaded::decode_epoch(&published(3, &[0])).unwrap(), 3);
    // Without a lineage (a Ferrocket before lineages), in a log that
    // holds no bytes of epoch 3: not taken.
    let bare =
        br#"{"epoch":3,"segments":[{"start":0,"size":100,"crc32":7,"key":"k/0","uploadedMs":1}]}"#;
    let unproven = Adopted::Unproven { epoch: 3 };
    assert_eq!(slave.adopt(bare, 500, &none(), 0, false).unwrap(), unproven);
    assert_eq!((slave.len(), slave.epoch()), (0, 3), "its epoch is kept");
    assert_eq!(
        slave
            .adopt(bare, 500, &epochs(&[(3, 0)]), 0, false)
            .unwrap(),
        Adopted::Changed
    );
    assert_eq!(
        slave
            .adopt(&published(3, &[0, 100]), 500, &epochs(&[(3, 0)]), 0, false)
            .unwrap(),
        Adopted::Changed
    );
    // A deposed master of epoch 2 wrote over the new master's copy.
    let stale = published(2, &[0, 100, 200]);
    let ignored = Adopted::Stale {
        published: 2,
        seen: 3,
    };
    assert_eq!(
        slave.adopt(&stale, 500, &none(), 0, false).unwrap(),
        ignored
    );
    // Durably: a restart ignores it too.
    let slave = Offloaded::load(dir.path(), 100).unwrap();
    assert_eq!(slave.epoch(), 3);
    assert_eq!(
        slave.adopt(&stale, 500, &none(), 0, false).unwrap(),
        ignored
    );
    assert_eq!(slave.entries().len(), 2);
    slave.note_epoch(4).unwrap();
    slave.note_epoch(1).unwrap();
    assert_eq!(Offloaded::load(dir.path(), 100).unwrap().epoch(), 4);
}

/// A manifest of `starts` published under `epoch` by a master whose
/// epoch file holds `lineage`.
fn published_by(epoch: i32, lineage: &[(i32, i64)], starts: &[i64]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let m = Offloaded::load(dir.path(), 100).unwrap();
    for start in starts {
        m.record(entry(*start)).unwrap();
    }
    m.encode(epoch, &epochs(lineage)).unwrap()
}

fn starts(m: &Offloaded) -> Vec<i64> {
    m.entries().iter().map(|e| e.start).collect()
}

/// A master of epoch 4, deposed while its log forked from the new
/// master's (epoch 5) at 150, seals [100, 200) and [200, 300) and
/// publishes them before the new master publishes: neither the new
/// master nor a slave of its takes them (they upload their own).
#[test]
fn a_deposed_masters_copy_past_the_fork_is_not_taken() {
    let zombie = published_by(4, &[(1, 0), (4, 100)], &[0, 100, 200]);
    let new_master = epochs(&[(1, 0), (4, 100), (5, 150)]);
    for keep_own in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let m = Offloaded::load(dir.path(), 100).unwrap();
        m.record(entry(300)).unwrap();
        m.adopt(&zombie, 600, &new_master, 0, keep_own).unwrap();
        let own = if keep_own { vec![0, 300] } else { vec![0] };
        assert_eq!(starts(&m), own, "keep_own {keep_own}");
    }
    // The same copy, to a replica whose log is the deposed master's
    // (it never followed the new one): taken as far as it reaches.
    let dir = tempfile::tempdir().unwrap();
    let m = Offloaded::load(dir.path(), 100).unwrap();
    m.adopt(&zombie, 250, &epochs(&[(1, 0), (4, 100)]), 0, false)
        .unwrap();
    assert_eq!(starts(&m), vec![0, 100]);
    // Outside controller mode (no lineage): up to the end, as before.
    m.adopt(
        &published_by(0, &[(1, 0)], &[0, 100, 200]),
        300,
        &none(),
        0,
        false,
    )
    .unwrap();
    assert_eq!(starts(&m), vec![0, 100, 200]);
}

/// A deposed master of a higher epoch (4) than any of the slave's bytes
/// (epoch 3, the slave's log cut back to 400 or not): its copies past
/// where epoch 4 began (150) are not taken.
#[test]
fn a_higher_epoch_past_the_slaves_bytes_is_not_taken() {
    let dir = tempfile::tempdir().unwrap();
    let slave = Offloaded::load(dir.path(), 100).unwrap();
    let zombie = published_by(4, &[(1, 0), (3, 100), (4, 150)], &[0, 100, 200, 300]);
    slave
        .adopt(&zombie, 400, &epochs(&[(1, 0), (3, 100)]), 0, false)
        .unwrap();
    assert_eq!(starts(&slave), vec![0]);
    // Once the slave holds epoch 4's bytes (it follows that master).
    let follows = epochs(&[(1, 0), (3, 100), (4, 150)]);
    slave.adopt(&zombie, 400, &follows, 0, false).unwrap();
    assert_eq!(starts(&slave), vec![0, 100, 200, 300]);
}

/// Recovery cut a torn tail at 150 (the slave's log, then copied from
/// the same master again): the master's copies are taken again once
/// the log holds those bytes again, in the same term.
#[test]
fn a_torn_tail_keeps_nothing_from_being_taken_again() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join(super::super::TIER_DIR);
    let lineage = [(1, 0), (3, 100)];
    let master = published_by(3, &lineage, &[0, 100, 200]);
    let slave = Offloaded::load(&dir, 100).unwrap();
    slave
        .adopt(&master, 300, &epochs(&lineage), 0, false)
        .unwrap();
    assert_eq!(super::super::forget_past(root.path(), 100, 150).unwrap(), 2);
    let slave = Offloaded::load(&dir, 100).unwrap();
    assert_eq!(starts(&slave), vec![0]);
    slave
        .adopt(&master, 250, &epochs(&lineage), 0, false)
        .unwrap();
    assert_eq!(starts(&slave), vec![0, 100]);
    slave
        .adopt(&master, 300, &epochs(&lineage), 0, false)
        .unwrap();
    assert_eq!(starts(&slave), vec![0, 100, 200]);
}

/// After the controller's epochs started again, the new master's epoch
/// file holds one entry, from its log's end on: its copy carries no
/// (empty) lineage. A slave given the same `tieredStoreEpochBase` (7:
/// the copy's epoch 8 is controller epoch 1) takes its entries up to
/// its end; one without the base finds no epoch 8 and takes nothing.
#[test]
fn a_master_whose_epochs_start_past_the_entries_is_taken() {
    let copy = published_by(8, &[(1, 500)], &[0, 100]);
    let file: ManifestFile = serde_json::from_slice(&copy).unwrap();
    assert!(file.lineage.is_none());
    let dir = tempfile::tempdir().unwrap();
    let slave = Offloaded::load(dir.path(), 100).unwrap();
    let own = epochs(&[(1, 500)]);
    let unproven = Adopted::Unproven { epoch: 8 };
    assert_eq!(slave.adopt(&copy, 600, &own, 0, false).unwrap(), unproven);
    assert!(starts(&slave).is_empty());
    slave.adopt(&copy, 600, &own, 7, false).unwrap();
    assert_eq!(starts(&slave), vec![0, 100]);
}

/// With `tieredStoreEpochBase` 7 (the epoch the set's copy carried when
/// the controller's epochs started again), a copy of epoch 7 or below is
/// from before the reset: its epoch names no entry of this epoch file, and
/// it is not one published outside controller mode, so nothing is taken;
/// its epoch is kept as seen.
#[test]
fn a_copy_from_before_the_epoch_reset_is_not_taken() {
    let bare =
        br#"{"epoch":7,"segments":[{"start":0,"size":100,"crc32":7,"key":"k/0","uploadedMs":1}]}"#;
    let with_lineage = published_by(5, &[(1, 0), (5, 100)], &[0, 100]);
    let own = epochs(&[(1, 500)]);
    for (copy, epoch) in [(&bare[..], 7), (&with_lineage[..], 5)] {
        for keep_own in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let taker = Offloaded::load(dir.path(), 100).unwrap();
            let unproven = Adopted::Unproven { epoch };
            assert_eq!(taker.adopt(copy, 600, &own, 7, keep_own).unwrap(), unproven);
            assert!(starts(&taker).is_empty());
            assert_eq!(taker.epoch(), epoch);
        }
    }
    // Without a base the bare copy of epoch 7 finds no epoch 7 here either.
    let dir = tempfile::tempdir().unwrap();
    let taker = Offloaded::load(dir.path(), 100).unwrap();
    let unproven = Adopted::Unproven { epoch: 7 };
    assert_eq!(taker.adopt(bare, 600, &own, 0, false).unwrap(), unproven);
}
