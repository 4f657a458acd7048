//! TimerStore: due order, restart without loss or re-delivery, limits,
//! many timers in one second, segment deletion and damaged files.

use std::fs;
use std::path::Path;

use ferrocket_store::timer::{
    AddOutcome, TimerConfig, TimerEntry, TimerError, TimerStore, TIMER_RECORD_BYTES,
};

const T0: i64 = 1_700_000_000_000;

fn config(max_delay_ms: u64) -> TimerConfig {
    TimerConfig {
        log_segment_bytes: 64 * TIMER_RECORD_BYTES as u64,
        ..TimerConfig::with_max_delay_ms(max_delay_ms)
    }
}

fn open(dir: &Path, cfg: &TimerConfig) -> TimerStore {
    TimerStore::open(dir, cfg.clone()).unwrap().0
}

/// Adds timers `(deliver_at_ms, physical_offset)` (size 10 each) at `now`.
fn add_all(store: &mut TimerStore, timers: &[(i64, i64)], now: i64) {
    for &(at, phy) in timers {
        let got = store.add(at, phy, 10, now).unwrap();
        assert_eq!(got, AddOutcome::Added { deliver_at_ms: at });
    }
}

fn keys(entries: &[TimerEntry]) -> Vec<(i64, i64)> {
    entries
        .iter()
        .map(|e| (e.deliver_at_ms, e.physical_offset))
        .collect()
}

#[test]
fn due_returns_exactly_the_due_timers_in_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path(), &config(60_000));
    // Added in CommitLog order, due in another order; two share a time.
    let timers = [
        (T0 + 3_000, 0),
        (T0 + 1_200, 10),
        (T0 + 2_500, 20),
        (T0 + 1_200, 30),
        (T0 + 2_501, 40),
        (T0 + 59_000, 50),
        (T0 + 900, 60),
    ];
    add_all(&mut store, &timers, T0);
    assert_eq!(store.pending_count(), 7);
    assert!(store.due(T0 + 899, 100).unwrap().is_empty());
    let due = store.due(T0 + 2_500, 100).unwrap();
    assert_eq!(
        keys(&due),
        vec![
            (T0 + 900, 60),
            (T0 + 1_200, 10),
            (T0 + 1_200, 30),
            (T0 + 2_500, 20)
        ]
    );
    assert!(due.iter().all(|e| e.size == 10 && !e.maybe_delivered));
    // Until marked, the same timers come back.
    assert_eq!(store.due(T0 + 2_500, 2).unwrap(), due[..2].to_vec());
    assert_eq!(store.mark_delivered(&due).unwrap(), 4);
    assert_eq!(
        store.mark_delivered(&due).unwrap(),
        0,
        "marking again is a no-op"
    );
    assert_eq!(store.pending_count(), 3);
    assert!(store.due(T0 + 2_500, 100).unwrap().is_empty());
    let due = store.due(T0 + 10_000, 100).unwrap();
    assert_eq!(keys(&due), vec![(T0 + 2_501, 40), (T0 + 3_000, 0)]);
    store.mark_delivered(&due).unwrap();
    assert!(store.delivered_floor_ms() > T0 + 3_000);
    let due = store.due(T0 + 60_000, 100).unwrap();
    assert_eq!(keys(&due), vec![(T0 + 59_000, 50)]);
    store.mark_delivered(&due).unwrap();
    assert_eq!(store.pending_count(), 0);
    // An entry due never handed out cannot be marked.
    let bogus = TimerEntry {
        deliver_at_ms: T0 + 70_000,
        physical_offset: 999,
        size: 1,
        maybe_delivered: false,
    };
    assert!(matches!(
        store.mark_delivered(&[bogus]),
        Err(TimerError::UnknownEntry { .. })
    ));
}

#[test]
fn restart_keeps_pending_and_never_returns_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(60_000);
    let timers: Vec<(i64, i64)> = (0..10).map(|i| (T0 + 1_000 + i * 100, i * 10)).collect();
    {
        let mut store = open(dir.path(), &cfg);
        add_all(&mut store, &timers, T0);
        let due = store.due(T0 + 1_450, 100).unwrap();
        assert_eq!(keys(&due), timers[..5].to_vec());
        // Out of order: the first, third and fifth are delivered.
        store.mark_delivered(&[due[0], due[2], due[4]]).unwrap();
        store.flush().unwrap();
        // After the checkpoint: one more add and one more mark, no flush
        // (the process dies; the mapped log survives in the page cache).
        // Its second is already loaded, so it is due right away.
        store.add(T0 + 1_350, 100, 10, T0).unwrap();
        let due = store.due(T0 + 1_450, 100).unwrap();
        assert_eq!(keys(&due), vec![timers[1], timers[3], (T0 + 1_350, 100)]);
        store.mark_delivered(&due[2..]).unwrap();
    }
    let (mut store, recovery) = TimerStore::open(dir.path(), cfg.clone()).unwrap();
    assert_eq!(recovery.pending, 7);
    assert_eq!(recovery.ingested_end, 110);
    // Replayed after the checkpoint: one ADD and one DONE.
    assert_eq!(recovery.replayed_records, 2);
    assert!(!recovery.wheel_rebuilt);
    assert_eq!(store.pending_count(), 7);
    // Re-fed timer messages below ingested_end are ignored.
    assert_eq!(
        store.add(T0 + 5_000, 90, 10, T0).unwrap(),
        AddOutcome::AlreadyIngested
    );
    let due = store.due(T0 + 10_000, 100).unwrap();
    let mut expected = vec![timers[1], timers[3]];
    expected.extend_from_slice(&timers[5..]);
    assert_eq!(keys(&due), expected);
    // Handed out before the restart: maybe delivered; the rest: not.
    let doubt: Vec<bool> = due.iter().map(|e| e.maybe_delivered).collect();
    assert_eq!(doubt, vec![true, true, false, false, false, false, false]);
    store.mark_delivered(&due[..3]).unwrap();
    store.flush().unwrap();
    drop(store);

    let (mut store, recovery) = TimerStore::open(dir.path(), cfg).unwrap();
    assert_eq!(recovery.pending, 4);
    assert_eq!(
        keys(&store.due(T0 + 10_000, 100).unwrap()),
        timers[6..].to_vec()
    );
}

#[test]
fn far_future_is_rejected_and_past_is_due_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path(), &config(10_000));
    let err = store.add(T0 + 10_001, 0, 10, T0).unwrap_err();
    assert!(matches!(err, TimerError::TooFarInFuture { .. }), "{err}");
    assert_eq!(
        store.add(T0 + 10_000, 0, 10, T0).unwrap(),
        AddOutcome::Added {
            deliver_at_ms: T0 + 10_000
        }
    );
    assert!(matches!(
        store.add(T0, 100, 0, T0),
        Err(TimerError::InvalidTimer(_))
    ));
    assert!(matches!(
        store.add(-5, 100, 10, T0),
        Err(TimerError::InvalidTimer(_))
    ));
    let due = store.due(T0 + 10_000, 10).unwrap();
    store.mark_delivered(&due).unwrap();
    // A deliver time before the delivered floor is moved up to it.
    let AddOutcome::Added { deliver_at_ms } = store.add(T0 + 500, 100, 10, T0 + 10_500).unwrap()
    else {
        panic!("not added");
    };
    assert!(deliver_at_ms >= store.delivered_floor_ms());
    assert!(deliver_at_ms > T0 + 10_000);
    let due = store.due(T0 + 11_000, 10).unwrap();
    assert_eq!(keys(&due), vec![(deliver_at_ms, 100)]);
}

#[test]
fn many_timers_in_one_second() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(60_000);
    let mut store = open(dir.path(), &cfg);
    let count = 5_000i64;
    // All in second T0/1000 + 5, in a scrambled ms order.
    for i in 0..count {
        let ms = (i * 7_919) % 1_000;
        store.add(T0 + 5_000 + ms, i * 10, 10, T0).unwrap();
    }
    store.add(T0 + 6_000, count * 10, 10, T0).unwrap();
    store.flush().unwrap();
    drop(store);
    let (mut store, recovery) = TimerStore::open(dir.path(), cfg.clone()).unwrap();
    assert_eq!(recovery.pending, count as u64 + 1);
    let mut seen = Vec::new();
    loop {
        let due = store.due(T0 + 5_999, 700).unwrap();
        if due.is_empty() {
            break;
        }
        assert!(due.len() <= 700);
        store.mark_delivered(&due).unwrap();
        seen.extend(keys(&due));
    }
    assert_eq!(seen.len(), count as usize);
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "strictly ordered, no repeats"
    );
    assert!(seen.iter().all(|(at, _)| *at < T0 + 6_000));
    assert_eq!(store.pending_count(), 1);
    store.flush().unwrap();
    drop(store);
    let mut store = open(dir.path(), &cfg);
    assert_eq!(
        keys(&store.due(T0 + 7_000, 10_000).unwrap()),
        vec![(T0 + 6_000, count * 10)]
    );
}

#[test]
fn lagging_delivery_backlogs_adds_until_caught_up() {
    let dir = tempfile::tempdir().unwrap();
    // 10 s maximum delay, a wheel of 22 one-second slots.
    let mut store = open(dir.path(), &config(10_000));
    store.add(T0 + 1_000, 0, 10, T0).unwrap();
    // 22 s later, second T0+23 s maps to the slot still holding T0+1 s.
    let err = store.add(T0 + 23_000, 100, 10, T0 + 22_000).unwrap_err();
    assert!(matches!(err, TimerError::Backlogged { .. }), "{err}");
    let due = store.due(T0 + 22_000, 10).unwrap();
    assert_eq!(keys(&due), vec![(T0 + 1_000, 0)]);
    store.mark_delivered(&due).unwrap();
    store.add(T0 + 23_000, 100, 10, T0 + 22_000).unwrap();
    assert_eq!(
        keys(&store.due(T0 + 23_000, 10).unwrap()),
        vec![(T0 + 23_000, 100)]
    );
}

fn log_files(dir: &Path) -> usize {
    fs::read_dir(dir.join("log")).unwrap().count()
}

#[test]
fn delivered_segments_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = TimerConfig {
        log_segment_bytes: 4 * TIMER_RECORD_BYTES as u64,
        ..TimerConfig::with_max_delay_ms(60_000)
    };
    let mut store = open(dir.path(), &cfg);
    for i in 0..40 {
        store.add(T0 + 1_000 + i * 500, i * 10, 10, T0).unwrap();
    }
    store.flush().unwrap();
    assert_eq!(log_files(dir.path()), 10);
    let due = store.due(T0 + 10_999, 100).unwrap();
    assert_eq!(due.len(), 20);
    store.mark_delivered(&due).unwrap();
    store.flush().unwrap();
    // 40 ADDs, a HANDOUT and 20 DONEs fill 16 segments; the 5 holding only
    // the delivered timers' ADDs go.
    assert_eq!(log_files(dir.path()), 11);
    let due = store.due(T0 + 60_000, 100).unwrap();
    store.mark_delivered(&due).unwrap();
    store.flush().unwrap();
    assert_eq!(store.pending_count(), 0);
    // Everything delivered: only the segment being written stays.
    assert_eq!(log_files(dir.path()), 1);
    drop(store);
    let (mut store, recovery) = TimerStore::open(dir.path(), cfg).unwrap();
    assert_eq!(recovery.pending, 0);
    assert!(store.due(T0 + 100_000, 100).unwrap().is_empty());
    store.add(T0 + 101_000, 1_000, 10, T0 + 100_000).unwrap();
    assert!(store.due(T0 + 100_999, 100).unwrap().is_empty());
    assert_eq!(store.due(T0 + 101_000, 100).unwrap().len(), 1);
}

#[test]
fn damaged_files() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(60_000);
    let timers: Vec<(i64, i64)> = (0..6).map(|i| (T0 + 2_000 + i * 1_000, i * 10)).collect();
    {
        let mut store = open(dir.path(), &cfg);
        add_all(&mut store, &timers, T0);
        store.flush().unwrap();
    }
    // Missing wheel file: rebuilt from the log.
    fs::remove_file(dir.path().join("wheel")).unwrap();
    let (mut store, recovery) = TimerStore::open(dir.path(), cfg.clone()).unwrap();
    assert!(recovery.wheel_rebuilt);
    assert_eq!(keys(&store.due(T0 + 10_000, 100).unwrap()), timers);
    store.flush().unwrap();
    drop(store);

    // A wheel whose heads point at wrong records: detected, rebuilt.
    let wheel = dir.path().join("wheel");
    let mut bytes = fs::read(&wheel).unwrap();
    for chunk in bytes.chunks_exact_mut(16) {
        if chunk[8..16] != (-1i64).to_be_bytes() {
            chunk[8..16].copy_from_slice(&0i64.to_be_bytes());
        }
    }
    fs::write(&wheel, &bytes).unwrap();
    let (mut store, recovery) = TimerStore::open(dir.path(), cfg.clone()).unwrap();
    assert!(recovery.wheel_rebuilt);
    assert_eq!(keys(&store.due(T0 + 10_000, 100).unwrap()), timers);
    drop(store);

    // A torn record at the end of the log (past the checkpoint): the tail
    // is dropped, not trusted.
    let segment = fs::read_dir(dir.path().join("log"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .min()
        .unwrap();
    let good = fs::read(&segment).unwrap();
    let mut bytes = good.clone();
    // Records 0..6: ADDs, 6: the HANDOUT of the first due(); the
    // checkpoint covers them. 7 is torn, 8 is garbage.
    let tail = 7 * TIMER_RECORD_BYTES;
    bytes[tail..tail + TIMER_RECORD_BYTES].copy_from_slice(&good[6 * TIMER_RECORD_BYTES..tail]);
    bytes[tail + 10] ^= 0xFF;
    bytes[tail + TIMER_RECORD_BYTES..tail + 2 * TIMER_RECORD_BYTES].fill(0xAB);
    fs::write(&segment, &bytes).unwrap();
    let (mut store, recovery) = TimerStore::open(dir.path(), cfg.clone()).unwrap();
    assert_eq!(recovery.pending, 6);
    assert_eq!(keys(&store.due(T0 + 10_000, 100).unwrap()), timers);
    drop(store);
    let bytes = fs::read(&segment).unwrap();
    assert!(bytes[tail..].iter().all(|b| *b == 0), "torn tail zeroed");

    // A damaged record below the checkpoint is durable data gone bad: an
    // error (the wheel still needs a rebuild here), nothing is truncated.
    let mut bytes = good.clone();
    bytes[3 * TIMER_RECORD_BYTES + 12] ^= 1;
    fs::write(&segment, &bytes).unwrap();
    assert!(matches!(
        TimerStore::open(dir.path(), cfg.clone()),
        Err(TimerError::Corrupt { .. })
    ));
    assert_eq!(fs::read(&segment).unwrap(), bytes);
    fs::write(&segment, &good).unwrap();

    // A damaged checkpoint is an error, not a silent restart from zero.
    let cp = dir.path().join("checkpoint");
    let mut bytes = fs::read(&cp).unwrap();
    bytes[10] ^= 1;
    fs::write(&cp, &bytes).unwrap();
    assert!(matches!(
        TimerStore::open(dir.path(), cfg.clone()),
        Err(TimerError::Corrupt { .. })
    ));

    // Changing the wheel size while timers are pending is refused.
    fs::write(&cp, {
        bytes[10] ^= 1;
        &bytes
    })
    .unwrap();
    let other = TimerConfig {
        wheel_slots: cfg.wheel_slots + 1,
        ..cfg.clone()
    };
    assert!(matches!(
        TimerStore::open(dir.path(), other),
        Err(TimerError::Config(_))
    ));
    assert!(matches!(
        TimerStore::open(
            dir.path(),
            TimerConfig {
                wheel_slots: 10,
                ..cfg
            }
        ),
        Err(TimerError::Config(_))
    ));
}

#[test]
fn replay_is_idempotent_when_the_wheel_is_newer_than_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(60_000);
    let cp = dir.path().join("checkpoint");
    {
        let mut store = open(dir.path(), &cfg);
        add_all(&mut store, &[(T0 + 2_000, 0)], T0);
        store.flush().unwrap();
        let old_checkpoint = fs::read(&cp).unwrap();
        add_all(&mut store, &[(T0 + 2_500, 10), (T0 + 4_000, 20)], T0);
        store.flush().unwrap();
        // As if the flush stopped after writing the wheel, before the
        // checkpoint: the wheel already holds the last two heads.
        fs::write(&cp, old_checkpoint).unwrap();
    }
    let (mut store, recovery) = TimerStore::open(dir.path(), cfg).unwrap();
    assert_eq!(recovery.pending, 3);
    assert_eq!(recovery.replayed_records, 2);
    assert!(!recovery.wheel_rebuilt);
    assert_eq!(
        keys(&store.due(T0 + 5_000, 100).unwrap()),
        vec![(T0 + 2_000, 0), (T0 + 2_500, 10), (T0 + 4_000, 20)]
    );
}

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
fn next_due_tracks_adds_deliveries_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    // 10 s maximum delay: a wheel of 22 one-second slots.
    let cfg = config(10_000);
    let mut store = open(dir.path(), &cfg);
    assert_eq!(store.next_due_ms(), None);
    add_all(&mut store, &[(T0 + 5_000, 0)], T0);
    assert_eq!(store.next_due_ms(), Some(T0 + 5_000));
    add_all(&mut store, &[(T0 + 3_000, 10), (T0 + 9_000, 20)], T0);
    assert_eq!(store.next_due_ms(), Some(T0 + 3_000));
    assert!(store.due(T0 + 2_000, 100).unwrap().is_empty());
    assert_eq!(store.next_due_ms(), Some(T0 + 3_000));
    let due = store.due(T0 + 3_000, 100).unwrap();
    assert_eq!(keys(&due), vec![(T0 + 3_000, 10)]);
    assert_eq!(
        store.next_due_ms(),
        Some(T0 + 3_000),
        "handed out, not delivered"
    );
    store.mark_delivered(&due).unwrap();
    assert_eq!(store.next_due_ms(), Some(T0 + 5_000));
    add_all(
        &mut store,
        &[(T0 + 4_500, 30), (T0 + 5_800, 40)],
        T0 + 3_000,
    );
    assert_eq!(store.next_due_ms(), Some(T0 + 4_500));
    store.flush().unwrap();
    drop(store);

    let mut store = open(dir.path(), &cfg);
    assert_eq!(store.next_due_ms(), Some(T0 + 4_500));
    let due = store.due(T0 + 5_000, 100).unwrap();
    assert_eq!(keys(&due), vec![(T0 + 4_500, 30), (T0 + 5_000, 0)]);
    // Out of order: the later one first changes nothing.
    store.mark_delivered(&due[1..]).unwrap();
    assert_eq!(store.next_due_ms(), Some(T0 + 4_500));
    store.mark_delivered(&due[..1]).unwrap();
    // Loaded but not yet due (second T0+5 s).
    assert_eq!(store.next_due_ms(), Some(T0 + 5_800));
    let due = store.due(T0 + 9_000, 100).unwrap();
    assert_eq!(keys(&due), vec![(T0 + 5_800, 40), (T0 + 9_000, 20)]);
    store.mark_delivered(&due).unwrap();
    assert_eq!(store.next_due_ms(), None);

    // Delivery lagging: a timer more than a whole wheel past the first
    // unloaded second, and one inside it.
    add_all(&mut store, &[(T0 + 33_000, 50)], T0 + 25_000);
    add_all(&mut store, &[(T0 + 20_000, 60)], T0 + 25_000);
    assert_eq!(store.next_due_ms(), Some(T0 + 20_000));
    let due = store.due(T0 + 25_000, 100).unwrap();
    assert_eq!(keys(&due), vec![(T0 + 20_000, 60)]);
    store.mark_delivered(&due).unwrap();
    assert_eq!(store.next_due_ms(), Some(T0 + 33_000));
    store.flush().unwrap();
    drop(store);
    let store = open(dir.path(), &cfg);
    assert_eq!(store.next_due_ms(), Some(T0 + 33_000));
}

#[test]
fn timer_store_can_move_to_a_blocking_thread() {
    fn assert_send<T: Send>() {}
    assert_send::<TimerStore>();
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
