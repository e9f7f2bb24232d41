//! Deterministic jitter: the same job and nominal time always get the same delay.
//!
//! A hash instead of a random number means a retried tick, a second replica or a restarted process
//! all compute the same actual fire time, which the exactly-once machinery downstream relies on. The
//! hash is FNV-1a followed by a SplitMix64 finaliser, written out here so that it can never change
//! with a dependency upgrade.

/// A delay in `[0, max_millis)` derived from the job id and the nominal fire time.
pub(crate) fn jitter_millis(job_id: &str, nominal: i64, max_millis: u64) -> u64 {
    if max_millis == 0 {
        return 0;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in job_id.bytes().chain(nominal.to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^= hash >> 31;
    hash % max_millis
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_bounded_and_spread() {
        assert_eq!(
            jitter_millis("job", 1_700_000_000, 30_000),
            jitter_millis("job", 1_700_000_000, 30_000)
        );
        assert_eq!(jitter_millis("job", 1, 0), 0);
        let values: Vec<u64> = (0..1000)
            .map(|i| jitter_millis("job", i * 60, 30_000))
            .collect();
        assert!(values.iter().all(|&v| v < 30_000));
        let mean = values.iter().sum::<u64>() / 1000;
        assert!((10_000..20_000).contains(&mean), "mean {mean}");
    }
}
