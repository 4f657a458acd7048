use super::*;

/// Queue offsets `min..times.len()`; message n stored at `times[n]` with
/// `sizes[n]` bytes.
struct Fake {
    min: i64,
    times: Vec<i64>,
    sizes: Vec<u64>,
}

impl RetainedQueue for Fake {
    fn min_offset(&self) -> i64 {
        self.min
    }
    fn max_offset(&self) -> i64 {
        self.times.len() as i64
    }
    /// A negative time: the message cannot be read (a lost entry).
    fn store_time_ms(&self, offset: i64) -> Option<i64> {
        let time = (offset >= self.min).then(|| self.times[offset as usize])?;
        (time >= 0).then_some(time)
    }
    fn entry_bytes(&self, offset: i64) -> Option<u64> {
        (offset >= self.min).then(|| self.sizes[offset as usize])
    }
}

fn attrs(pairs: &[(&'static str, &'static str)]) -> Option<TopicRetention> {
    TopicRetention::from_attributes(|key| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v))
}

#[test]
fn reads_attributes() {
    assert_eq!(attrs(&[]), None);
    assert_eq!(attrs(&[("message.type", "NORMAL")]), None);
    let both = attrs(&[("retention.ms", "60000"), ("retention.bytes", "1024")]).unwrap();
    assert_eq!((both.ms, both.bytes), (Some(60_000), Some(1024)));
    let forever = attrs(&[("retention.ms", "-1")]).unwrap();
    assert_eq!(forever.ms, Some(u64::MAX));
    assert!(forever.outlives(72 * 3_600_000) && !both.outlives(72 * 3_600_000));
    assert_eq!(attrs(&[("retention.bytes", "-1")]), None);
    for bad in ["0", "-2", "x", "1.5", ""] {
        assert!(parse_value(bad).is_err(), "{bad}");
    }
}

/// An unreadable message among young ones (the gallop probes offset 3)
/// must not move the floor past the young messages before it.
#[test]
fn an_unreadable_message_counts_as_young() {
    let queue = Fake {
        min: 0,
        times: vec![10, 20, 60, -1, 70, 80, 90, 100],
        sizes: vec![1; 8],
    };
    assert_eq!(time_floor(&queue, 30, 80), 2);
}

#[test]
fn time_floor_is_the_first_young_message() {
    let queue = Fake {
        min: 0,
        times: vec![10, 20, 30, 40, 50],
        sizes: vec![1; 5],
    };
    assert_eq!(time_floor(&queue, 25, 50), 2);
    assert_eq!(time_floor(&queue, 5, 50), 4);
    assert_eq!(time_floor(&queue, 1000, 50), 0);
    // All expired: the queue empties (min = max).
    assert_eq!(time_floor(&queue, 5, 100), 5);
    assert_eq!(time_floor(&queue, u64::MAX, 100), 0);
}

#[test]
fn size_tally_follows_appends_and_drops() {
    let mut queue = Fake {
        min: 0,
        times: vec![0; 4],
        sizes: vec![100, 200, 300, 400],
    };
    let mut tally = SizeTally::default();
    assert_eq!(tally.floor(&queue, 10_000), 0);
    assert_eq!(tally.floor(&queue, 700), 2);
    queue.min = 2;
    queue.times.push(0);
    queue.sizes.push(50);
    assert_eq!(tally.floor(&queue, 700), 3, "300 + 400 + 50 is over");
    // Dropped below the tally by something else: counted again.
    queue.min = 4;
    assert_eq!(tally.floor(&queue, 700), 4);
    assert_eq!(tally.floor(&queue, 10), 5);
}

#[test]
fn lowest_kept_takes_the_stricter_rule() {
    let queue = Fake {
        min: 1,
        times: vec![10, 20, 30, 40, 50],
        sizes: vec![100; 5],
    };
    let rule = TopicRetention {
        ms: Some(25),
        bytes: Some(150),
    };
    let mut tally = SizeTally::default();
    assert_eq!(lowest_kept(&rule, &queue, &mut tally, 50), 4);
    let loose = TopicRetention {
        ms: Some(1000),
        bytes: None,
    };
    assert_eq!(
        lowest_kept(&loose, &queue, &mut tally, 50),
        1,
        "never below min"
    );
}

#[test]
fn keep_floors_wait_for_every_shard() {
    let needs = |keep, needed| Needs {
        keep,
        keep_remote: keep,
        needed,
        pinned: i64::MAX,
    };
    let floors = KeepFloors::default();
    assert_eq!(floors.lowest(2), None);
    floors.publish(0, needs(i64::MAX, 9000));
    assert_eq!(floors.lowest(2), None);
    floors.publish(1, needs(4096, 5000));
    assert_eq!(floors.lowest(2), Some(needs(4096, 5000)));
    floors.publish(1, needs(i64::MAX, 10_000));
    assert_eq!(floors.lowest(2), Some(needs(i64::MAX, 9000)));
}

#[test]
fn time_floor_gallops_to_the_same_answer_as_a_scan() {
    for len in 0..40usize {
        for min in 0..=len.min(5) {
            let queue = Fake {
                min: min as i64,
                times: (0..len as i64).map(|n| n * 10).collect(),
                sizes: vec![1; len],
            };
            for oldest in -5..(len as i64 * 10 + 5) {
                let scan = (min..len)
                    .find(|n| queue.times[*n] >= oldest)
                    .unwrap_or(len) as i64;
                assert_eq!(
                    time_floor(&queue, 1000, oldest + 1000),
                    scan,
                    "{len} {min} {oldest}"
                );
            }
        }
    }
}
