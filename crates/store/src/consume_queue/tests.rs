use super::*;

fn entry(n: i64) -> CqEntry {
    CqEntry {
        physical_offset: n * 100,
        size: 100,
        tags_code: n,
    }
}

#[test]
fn a_damaged_entry_end_does_not_overflow() {
    let damaged = CqEntry {
        physical_offset: i64::MAX - 1,
        size: 100,
        tags_code: 0,
    };
    assert_eq!(damaged.end(), i64::MAX);
    assert_eq!(entry(3).end(), 400);
}

#[test]
fn appends_across_files_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let qdir = crate::names::queue_dir(dir.path(), "T", 3).unwrap();
    let cq = ConsumeQueue::open(qdir.clone(), 4).unwrap();
    assert_eq!((cq.min_offset(), cq.max_offset()), (0, 0));
    for n in 0..10 {
        cq.append(n, entry(n)).unwrap();
    }
    assert!(cq.append(11, entry(11)).is_err());
    assert_eq!(cq.get(2, 5), (2..7).map(entry).collect::<Vec<_>>());
    assert_eq!(cq.get(8, 5), vec![entry(8), entry(9)]);
    assert!(cq.get(10, 5).is_empty());
    cq.flush_blocking().unwrap();
    drop(cq);
    let names: Vec<i64> = list_offset_files(&qdir)
        .unwrap()
        .into_iter()
        .map(|f| f.0)
        .collect();
    assert_eq!(names, vec![0, 80, 160]);
    let cq = ConsumeQueue::open(qdir, 4).unwrap();
    assert_eq!(cq.max_offset(), 10);
    assert_eq!(cq.last_entry(), Some(entry(9)));
    cq.truncate_beyond(7 * 100 + 50).unwrap();
    assert_eq!(cq.max_offset(), 7);
    cq.append(7, entry(7)).unwrap();
    assert_eq!(cq.entry(7), Some(entry(7)));
}

#[test]
fn only_the_written_file_is_mapped_without_read_around() {
    let dir = tempfile::tempdir().unwrap();
    let qdir = crate::names::queue_dir(dir.path(), "T", 0).unwrap();
    let random = |n: i64| files::mapped_for_random_reads(&qdir.join(offset_file_name(n)));
    let cq = ConsumeQueue::open(qdir.clone(), 4).unwrap();
    (0..10).for_each(|n| cq.append(n, entry(n)).unwrap());
    assert_eq!(
        [random(0), random(80), random(160)],
        [Some(false), Some(false), Some(true)]
    );
    drop(cq);
    let cq = ConsumeQueue::open(qdir.clone(), 4).unwrap();
    assert_eq!(
        [random(0), random(80), random(160)],
        [Some(false), Some(false), Some(true)]
    );
    cq.truncate(6).unwrap();
    assert_eq!([random(80), random(160)], [Some(true), None]);
}

#[test]
fn retention_floor_hides_deletes_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let qdir = crate::names::queue_dir(dir.path(), "T", 0).unwrap();
    let cq = ConsumeQueue::open(qdir.clone(), 4).unwrap();
    (0..10).for_each(|n| cq.append(n, entry(n)).unwrap());
    assert_eq!(
        cq.raise_floor(6).unwrap(),
        1,
        "file [0, 4) goes, [4, 8) holds 6"
    );
    assert_eq!((cq.min_offset(), cq.max_offset()), (6, 10));
    assert!(cq.get(5, 2).is_empty() && cq.entry(6) == Some(entry(6)));
    assert_eq!(cq.raise_floor(3).unwrap(), 0, "a floor never goes down");
    cq.flush_blocking().unwrap();
    drop(cq);
    // Reopened (as recovery does) the entries are there; the owner's
    // load_floor hides them again.
    let cq = ConsumeQueue::open(qdir.clone(), 4).unwrap();
    assert_eq!(cq.min_offset(), 4);
    cq.load_floor().unwrap();
    assert_eq!(cq.min_offset(), 6);
    // Recovery cutting below the floor: the queue reads empty, and the
    // floor comes down to the cut, so the messages written after it (new
    // ones, from offset 5) are all readable, across a reopen too.
    cq.truncate_beyond(5 * 100 + 50).unwrap();
    assert_eq!((cq.min_offset(), cq.max_offset()), (5, 5));
    (5..8).for_each(|n| cq.append(n, entry(n)).unwrap());
    assert_eq!((cq.min_offset(), cq.max_offset()), (5, 8));
    cq.flush_blocking().unwrap();
    drop(cq);
    let cq = ConsumeQueue::open(qdir.clone(), 4).unwrap();
    cq.load_floor().unwrap();
    assert_eq!((cq.min_offset(), cq.max_offset()), (5, 8));
    // Everything expired: min = max, the last file stays.
    assert_eq!(cq.raise_floor(100).unwrap(), 0);
    assert_eq!((cq.min_offset(), cq.max_offset()), (8, 8));
    assert!(qdir.join(floor::FLOOR_FILE).exists());
    assert_eq!(list_offset_files(&qdir).unwrap().len(), 1);
}

/// A floor stored above the queue's end (another instance cut the queue,
/// as recovery does before the owner opens it) comes down at load; an
/// unreadable floor file counts as none.
#[test]
fn a_stale_or_unreadable_floor_never_hides_new_messages() {
    let dir = tempfile::tempdir().unwrap();
    let qdir = crate::names::queue_dir(dir.path(), "T", 0).unwrap();
    let cq = ConsumeQueue::open(qdir.clone(), 4).unwrap();
    (0..3).for_each(|n| cq.append(n, entry(n)).unwrap());
    cq.flush_blocking().unwrap();
    drop(cq);
    std::fs::write(qdir.join(floor::FLOOR_FILE), "9").unwrap();
    let cq = ConsumeQueue::open(qdir.clone(), 4).unwrap();
    cq.load_floor().unwrap();
    assert_eq!((cq.min_offset(), cq.max_offset()), (3, 3));
    cq.append(3, entry(3)).unwrap();
    assert_eq!(cq.entry(cq.min_offset()), Some(entry(3)));
    let stored = std::fs::read_to_string(qdir.join(floor::FLOOR_FILE)).unwrap();
    assert_eq!(stored.trim(), "3");
    std::fs::write(qdir.join(floor::FLOOR_FILE), "").unwrap();
    cq.load_floor().unwrap();
    assert_eq!(cq.min_offset(), 0);
}
