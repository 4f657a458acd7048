//! TimerStore across restarts: nothing pending lost, nothing delivered
//! returned again, delivered segments deleted, damaged files, and replay
//! when the wheel is newer than the checkpoint.

#[path = "common/timer.rs"]
mod timer_common;

use std::fs;

use ferrocket_store::timer::{AddOutcome, TimerConfig, TimerError, TimerStore, TIMER_RECORD_BYTES};
use timer_common::{add_all, config, keys, log_files, open, T0};

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
