use super::file::{decode, encode, EpochFile};
use super::*;

fn cache(pairs: &[(i32, i64)]) -> EpochCache {
    let entries: Vec<_> = pairs.iter().map(|&(e, s)| EpochEntry::new(e, s)).collect();
    EpochCache::from_entries(&entries).unwrap()
}

/// The worked example of RocketMQ's controller design: the old master
/// wrote epoch 8 from 2250, the new master's epoch 8 starts at 2500, so
/// they share epoch 7 up to where the old master's 8 began.
#[test]
fn worked_example_forks_in_epoch_eight_and_keeps_up_to_2250() {
    let master = cache(&[(6, 200), (7, 1200), (8, 2500)]);
    let slave = cache(&[(6, 200), (7, 1200), (8, 2250)]);
    assert_eq!(fork_point(&slave, 2700, &master, 3000), ForkPoint::At(2250));
}

#[test]
fn same_newest_epoch_keeps_the_nearer_end() {
    let master = cache(&[(6, 200), (7, 1200)]);
    // The slave is behind in the shared epoch: nothing to cut.
    assert_eq!(
        fork_point(&cache(&[(6, 200), (7, 1200)]), 1500, &master, 1800),
        ForkPoint::At(1500)
    );
    // The slave (an old master) has a tail the master never got.
    assert_eq!(
        fork_point(&cache(&[(6, 200), (7, 1200)]), 1900, &master, 1800),
        ForkPoint::At(1800)
    );
    // Equal ends: nothing to cut, nothing to copy.
    assert_eq!(
        fork_point(&cache(&[(6, 200), (7, 1200)]), 1800, &master, 1800),
        ForkPoint::At(1800)
    );
}

#[test]
fn an_empty_log_forks_where_it_ends_whatever_its_epochs() {
    let master = cache(&[(2, 0), (3, 900)]);
    assert_eq!(
        fork_point(&cache(&[(1, 0)]), 0, &master, 1000),
        ForkPoint::At(0)
    );
    assert_eq!(
        fork_point(&cache(&[(1, 0)]), 10, &master, 1000),
        ForkPoint::NoCommonEpoch
    );
}

#[test]
fn master_ahead_by_epochs_forks_at_the_end_of_the_shared_one() {
    let master = cache(&[(1, 0), (2, 500), (3, 900)]);
    assert_eq!(
        fork_point(&cache(&[(1, 0)]), 700, &master, 1000),
        ForkPoint::At(500)
    );
    assert_eq!(
        fork_point(&cache(&[(1, 0)]), 300, &master, 1000),
        ForkPoint::At(300)
    );
}

#[test]
fn empty_local_list_copies_from_the_start() {
    let master = cache(&[(1, 0)]);
    assert_eq!(
        fork_point(&EpochCache::new(), 0, &master, 100),
        ForkPoint::NoLocalEpochs
    );
}

#[test]
fn no_common_epoch_is_reported() {
    // Same epoch numbers but other starts, and epochs the master lacks.
    let master = cache(&[(2, 100), (3, 400)]);
    assert_eq!(
        fork_point(&cache(&[(2, 0), (4, 500)]), 900, &master, 800),
        ForkPoint::NoCommonEpoch
    );
    assert_eq!(
        fork_point(&cache(&[(1, 0)]), 50, &EpochCache::new(), 0),
        ForkPoint::NoCommonEpoch
    );
}

#[test]
fn append_refuses_what_does_not_grow() {
    let mut epochs = cache(&[(3, 100)]);
    for bad in [(3, 200), (2, 200), (4, 100), (5, 50)] {
        let entry = EpochEntry::new(bad.0, bad.1);
        assert!(
            matches!(epochs.append(entry), Err(EpochError::NotAfterLast { .. })),
            "{bad:?} accepted"
        );
    }
    assert_eq!(
        epochs.append(EpochEntry::new(-1, 0)),
        Err(EpochError::Negative(EpochEntry::new(-1, 0)))
    );
    epochs.append(EpochEntry::new(4, 101)).unwrap();
    assert_eq!(epochs.last_epoch(), 4);
    assert_eq!(EpochCache::new().last_epoch(), -1);
}

#[test]
fn truncation_and_lookups() {
    let mut epochs = cache(&[(1, 0), (2, 100), (3, 200), (4, 300)]);
    assert_eq!(epochs.entry_at(150, 400), Some(EpochEntry::new(2, 100)));
    assert_eq!(epochs.entry_at(399, 400), Some(EpochEntry::new(4, 300)));
    assert_eq!(epochs.entry_at(400, 400), None);
    assert_eq!(epochs.next_after(2), Some(EpochEntry::new(3, 200)));
    assert_eq!(epochs.next_after(4), None);
    assert_eq!(epochs.get(3), Some(EpochEntry::new(3, 200)));

    epochs.truncate_from_epoch(4);
    assert_eq!(epochs.last(), Some(EpochEntry::new(3, 200)));
    epochs.truncate_from_offset(150);
    assert_eq!(epochs, cache(&[(1, 0), (2, 100)]));
    // Retention removed the CommitLog below 120: epoch 1 is gone, epoch 2
    // now starts where the log does.
    epochs.truncate_before_offset(120, 250);
    assert_eq!(epochs, cache(&[(2, 120)]));
    // An offset past the end removes everything.
    epochs.truncate_before_offset(300, 250);
    assert!(epochs.is_empty());
}

/// The example in the doc of Java's `CheckpointFile`.
#[test]
fn file_text_matches_java() {
    let text = encode(&[EpochEntry::new(7, 7000), EpochEntry::new(8, 8000)]);
    assert_eq!(text, "2\n773307083\n7-7000\n8-8000\n");
    assert_eq!(
        decode(&text).unwrap(),
        vec![EpochEntry::new(7, 7000), EpochEntry::new(8, 8000)]
    );
    // Windows line ends read the same; a CRC of 0 is not checked.
    assert_eq!(
        decode("1\r\n0\r\n5-10\r\n").unwrap(),
        vec![EpochEntry::new(5, 10)]
    );
}

#[test]
fn damaged_text_is_refused() {
    for bad in [
        "",
        "x\n0\n",
        "2\n0\n7-7000\n",
        "1\n0\n7-7000\n8-8000\n",
        "1\n0\n7-70-00\n",
        "2\n1\n7-7000\n8-8000\n",
    ] {
        assert!(decode(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn file_round_trips_and_falls_back_to_its_backup() {
    let dir = tempfile::tempdir().unwrap();
    let file = EpochFile::in_store(dir.path());
    assert!(file.read().unwrap().is_empty());
    // An empty list writes nothing, as Java.
    file.write(&EpochCache::new()).unwrap();
    assert!(!file.path().exists());

    let first = cache(&[(1, 0)]);
    let second = cache(&[(1, 0), (2, 4096)]);
    file.write(&first).unwrap();
    file.write(&second).unwrap();
    assert_eq!(file.read().unwrap(), second);

    // A torn or damaged file: the previous version is read from the backup.
    std::fs::write(file.path(), "2\n12345\n1-0\n2-4096\n").unwrap();
    assert_eq!(file.read().unwrap(), first);
    std::fs::write(file.path(), "").unwrap();
    assert_eq!(file.read().unwrap(), first);
    std::fs::remove_file(file.path()).unwrap();
    assert_eq!(file.read().unwrap(), first);
}
