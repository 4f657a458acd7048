//! TimerStore after the CommitLog is truncated: timers at or past the end
//! die exactly once, reused offsets are delivered, and dead timers stay
//! dead across restarts and segment deletion.

#[path = "common/timer.rs"]
mod timer_common;

use std::fs;

use ferrocket_store::timer::{AddOutcome, TimerConfig, TimerError, TimerStore, TIMER_RECORD_BYTES};
use timer_common::{add_all, config, keys, log_files, open, T0};

#[test]
fn truncation_drops_exactly_the_timers_at_or_after_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(60_000);
    let mut store = open(dir.path(), &cfg);
    let timers = [
        (T0 + 2_000, 0),
        (T0 + 1_000, 10),
        (T0 + 3_000, 20),
        (T0 + 1_500, 30),
        (T0 + 2_500, 40),
        (T0 + 1_200, 50),
        (T0 + 4_000, 60),
        (T0 + 1_100, 70),
        (T0 + 2_200, 80),
        (T0 + 5_000, 90),
    ];
    add_all(&mut store, &timers, T0);
    let due = store.due(T0 + 1_200, 100).unwrap();
    assert_eq!(
        keys(&due),
        vec![(T0 + 1_000, 10), (T0 + 1_100, 70), (T0 + 1_200, 50)]
    );
    // 10 (below the end) and 70 (at/after it) delivered; 50 handed out only.
    store.mark_delivered(&due[..2]).unwrap();
    assert_eq!(store.pending_count(), 8);
    assert!(matches!(
        store.truncate_from(-1),
        Err(TimerError::InvalidTimer(_))
    ));

    // Pending at offsets >= 50: 50, 60, 80, 90 (70 was delivered).
    assert_eq!(store.truncate_from(50).unwrap(), 4);
    assert_eq!(store.pending_count(), 4);
    assert_eq!(store.ingested_end(), 50);
    assert_eq!(store.next_due_ms(), Some(T0 + 1_500));
    // Nothing more to do: cheap no-ops.
    assert_eq!(store.truncate_from(50).unwrap(), 0);
    assert_eq!(store.truncate_from(1_000).unwrap(), 0);
    assert_eq!(store.ingested_end(), 50);
    assert_eq!(
        store.add(T0 + 9_000, 40, 10, T0).unwrap(),
        AddOutcome::AlreadyIngested
    );
    let survivors = vec![
        (T0 + 1_500, 30),
        (T0 + 2_000, 0),
        (T0 + 2_500, 40),
        (T0 + 3_000, 20),
    ];
    assert_eq!(keys(&store.due(T0 + 10_000, 100).unwrap()), survivors);
    drop(store);

    // Durable: the dropped timers do not come back after a restart.
    let (mut store, recovery) = TimerStore::open(dir.path(), cfg.clone()).unwrap();
    assert_eq!(recovery.pending, 4);
    assert_eq!(recovery.ingested_end, 50);
    assert_eq!(store.next_due_ms(), Some(T0 + 1_500));
    let due = store.due(T0 + 10_000, 100).unwrap();
    assert_eq!(keys(&due), survivors);
    store.mark_delivered(&due).unwrap();
    assert_eq!(store.pending_count(), 0);
    assert_eq!(store.next_due_ms(), None);
}

#[test]
fn reused_offsets_after_truncation_are_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(60_000);
    let cp = dir.path().join("checkpoint");
    let (a, b, c, c2, d) = (
        (T0 + 1_000, 0),
        (T0 + 2_000, 10),
        (T0 + 2_000, 20),
        (T0 + 2_000, 30),
        (T0 + 3_000, 40),
    );
    {
        let mut store = open(dir.path(), &cfg);
        add_all(&mut store, &[a, b, c, c2, d], T0);
        let due = store.due(T0 + 2_000, 100).unwrap();
        assert_eq!(keys(&due), vec![a, b, c, c2]);
        // a, b and c2 delivered, c only handed out: the floor sits at c and
        // c2 is delivered above it.
        store.mark_delivered(&[due[0], due[1], due[3]]).unwrap();
        store.flush().unwrap();
    }
    let before_truncation = fs::read(&cp).unwrap();
    {
        // Restart: the CommitLog lost everything from offset 10.
        let mut store = open(dir.path(), &cfg);
        assert_eq!(store.truncate_from(10).unwrap(), 2, "c and d");
        assert_eq!(store.pending_count(), 0);
        assert_eq!(store.next_due_ms(), None);

        // New messages at the same offsets, three with the very same keys
        // as dead timers (below the floor, handed out, delivered above the
        // floor), one due before the floor.
        add_all(&mut store, &[b, c, c2, (T0 + 2_500, 40)], T0 + 2_000);
        assert_eq!(
            store.add(T0 + 1_500, 50, 10, T0 + 2_000).unwrap(),
            AddOutcome::Added {
                deliver_at_ms: T0 + 2_000
            }
        );
        assert_eq!(store.pending_count(), 5);
        assert_eq!(store.ingested_end(), 60);
        assert_eq!(store.next_due_ms(), Some(T0 + 2_000));
        let due = store.due(T0 + 2_000, 100).unwrap();
        assert_eq!(keys(&due), vec![b, c, c2, (T0 + 2_000, 50)]);
        assert!(
            due.iter().all(|e| !e.maybe_delivered),
            "new messages were never handed out: {due:?}"
        );
        // Not marked: the process dies, and the truncation's checkpoint
        // is lost too, so recovery replays the TRUNCATE record.
    }
    fs::write(&cp, &before_truncation).unwrap();
    let (mut store, recovery) = TimerStore::open(dir.path(), cfg.clone()).unwrap();
    assert_eq!(recovery.pending, 5);
    assert_eq!(recovery.ingested_end, 60);
    assert_eq!(store.next_due_ms(), Some(T0 + 2_000));
    let due = store.due(T0 + 2_000, 100).unwrap();
    assert_eq!(keys(&due), vec![b, c, c2, (T0 + 2_000, 50)]);
    store.mark_delivered(&due).unwrap();
    assert_eq!(store.next_due_ms(), Some(T0 + 2_500));
    drop(store); // no flush: the DONEs replay too

    let (mut store, recovery) = TimerStore::open(dir.path(), cfg.clone()).unwrap();
    assert_eq!(recovery.pending, 1);
    assert_eq!(store.next_due_ms(), Some(T0 + 2_500));
    let due = store.due(T0 + 10_000, 100).unwrap();
    assert_eq!(keys(&due), vec![(T0 + 2_500, 40)], "dead d stays dead");
    store.mark_delivered(&due).unwrap();
    store.flush().unwrap();
    drop(store);

    // Also with the wheel rebuilt from the whole log.
    fs::remove_file(dir.path().join("wheel")).unwrap();
    let (mut store, recovery) = TimerStore::open(dir.path(), cfg).unwrap();
    assert!(recovery.wheel_rebuilt);
    assert_eq!(recovery.pending, 0);
    assert!(store.due(T0 + 10_000, 100).unwrap().is_empty());
}

#[test]
fn truncation_replays_from_the_log_when_the_checkpoint_is_older() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(60_000);
    let cp = dir.path().join("checkpoint");
    let timers: Vec<(i64, i64)> = (0..6).map(|i| (T0 + 1_000 + i * 700, i * 10)).collect();
    {
        let mut store = open(dir.path(), &cfg);
        add_all(&mut store, &timers, T0);
        store.flush().unwrap();
        let old_checkpoint = fs::read(&cp).unwrap();
        assert_eq!(store.truncate_from(30).unwrap(), 3);
        add_all(&mut store, &[(T0 + 1_100, 30)], T0);
        store.flush().unwrap();
        // As if the truncation's checkpoint never made it to disk.
        fs::write(&cp, old_checkpoint).unwrap();
    }
    let (mut store, recovery) = TimerStore::open(dir.path(), cfg.clone()).unwrap();
    // Replayed after the old checkpoint: the TRUNCATE and the new ADD.
    assert_eq!(recovery.replayed_records, 2);
    assert_eq!(recovery.pending, 4);
    assert_eq!(recovery.ingested_end, 40);
    let mut expected = timers[..3].to_vec();
    expected.insert(1, (T0 + 1_100, 30));
    assert_eq!(keys(&store.due(T0 + 10_000, 100).unwrap()), expected);
}

#[test]
fn repeated_truncations_count_each_timer_once() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(60_000);
    let mut store = open(dir.path(), &cfg);
    let old: Vec<(i64, i64)> = (0..5).map(|i| (T0 + 1_000 + i * 100, i * 10)).collect();
    add_all(&mut store, &old, T0);
    assert_eq!(store.truncate_from(30).unwrap(), 2);
    let new: Vec<(i64, i64)> = (3..6).map(|i| (T0 + 5_000 + i * 100, i * 10)).collect();
    add_all(&mut store, &new, T0);
    assert_eq!(store.pending_count(), 6);
    // 40' and 50' (the old 40 is already dead).
    assert_eq!(store.truncate_from(40).unwrap(), 2);
    assert_eq!(store.pending_count(), 4);
    // Below both: the old 20 and the new 30'.
    assert_eq!(store.truncate_from(15).unwrap(), 2);
    assert_eq!(store.pending_count(), 2);
    assert_eq!(store.ingested_end(), 15);
    add_all(&mut store, &[(T0 + 1_050, 15)], T0);
    let expected = vec![old[0], (T0 + 1_050, 15), old[1]];
    assert_eq!(keys(&store.due(T0 + 10_000, 100).unwrap()), expected);
    drop(store);
    let (mut store, recovery) = TimerStore::open(dir.path(), cfg).unwrap();
    assert_eq!(recovery.pending, 3);
    assert_eq!(recovery.ingested_end, 25);
    assert_eq!(keys(&store.due(T0 + 10_000, 100).unwrap()), expected);
}

#[test]
fn truncated_timers_stay_dead_as_segments_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = TimerConfig {
        log_segment_bytes: 4 * TIMER_RECORD_BYTES as u64,
        ..TimerConfig::with_max_delay_ms(60_000)
    };
    let mut store = open(dir.path(), &cfg);
    let timers: Vec<(i64, i64)> = (0..12).map(|i| (T0 + 1_000 + i * 1_000, i * 10)).collect();
    add_all(&mut store, &timers, T0);
    assert_eq!(store.truncate_from(60).unwrap(), 6);
    let mut delivered = Vec::new();
    for now in (2..16).map(|s| T0 + s * 1_000) {
        let due = store.due(now, 100).unwrap();
        store.mark_delivered(&due).unwrap();
        store.flush().unwrap();
        delivered.extend(keys(&due));
        drop(store);
        // Each restart must agree: the dead timers never come back.
        store = open(dir.path(), &cfg);
    }
    assert_eq!(delivered, timers[..6].to_vec());
    assert_eq!(store.pending_count(), 0);
    assert_eq!(store.next_due_ms(), None);
    assert!(log_files(dir.path()) <= 2, "old segments deleted");
    // The truncation is pruned with its segments; new timers still work.
    add_all(&mut store, &[(T0 + 20_000, 60)], T0 + 16_000);
    assert_eq!(
        keys(&store.due(T0 + 20_000, 100).unwrap()),
        vec![(T0 + 20_000, 60)]
    );
}
