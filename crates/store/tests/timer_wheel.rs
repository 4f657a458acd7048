//! TimerStore in one run: due order, limits (too far ahead, already past),
//! many timers in one second, backlog while delivery lags, and the next
//! due time.

#[path = "common/timer.rs"]
mod timer_common;

use ferrocket_store::timer::{AddOutcome, TimerEntry, TimerError, TimerStore};
use timer_common::{add_all, config, keys, open, T0};

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

/// A new wheel file holds its blocks from the start: its first persist
/// writes the whole wheel, and on a nearly full disk a sparse file would
/// take the last free bytes half-written (and fail) instead.
#[test]
fn a_new_wheel_file_is_allocated_when_created() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    if !fallocate_works(dir.path()) {
        eprintln!("SKIPPED: this file system has no fallocate; the wheel stays sparse here");
        return;
    }
    let store = open(dir.path(), &config(60_000));
    let wheel = std::fs::metadata(dir.path().join("wheel")).unwrap();
    assert!(wheel.len() > 0);
    assert!(
        wheel.blocks() * 512 >= wheel.len(),
        "{} of {} bytes allocated",
        wheel.blocks() * 512,
        wheel.len()
    );
    drop(store);
}

/// Whether `fallocate` here gives a file blocks (some file systems accept
/// the call and reserve nothing).
fn fallocate_works(dir: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::io::AsRawFd;
    let probe = std::fs::File::create(dir.join("probe")).unwrap();
    // SAFETY: plain syscall on an open descriptor.
    let done = unsafe { libc::fallocate(probe.as_raw_fd(), 0, 0, 4096) } == 0;
    let blocks = probe.metadata().unwrap().blocks();
    drop(probe);
    std::fs::remove_file(dir.join("probe")).unwrap();
    done && blocks * 512 >= 4096
}
