//! fio's latency histogram (fio-compat.md §4.3; fio's `stat.h` and `stat.c`
//! `plat_val_to_idx`, `plat_idx_to_val`, `calc_clat_percentiles`).
//!
//! fio keeps no samples: each latency in nanoseconds goes to one of 1856 log-linear buckets,
//! 29 groups of 64. Values below 128 ns have a bucket each; a larger value whose highest set
//! bit is `m` goes to group `m − 5`, bucket the 6 bits below its top bit (relative error at
//! most 1/128). A bucket is reported by its midpoint. Percentiles, and json+'s `bins`, are
//! read from these buckets, so they are fio's quantised values, not elevator's exact ones.

/// Bits of a group's bucket index (fio's `FIO_IO_U_PLAT_BITS`).
const PLAT_BITS: u32 = 6;
/// Buckets per group (fio's `FIO_IO_U_PLAT_VAL`).
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Groups (fio's `FIO_IO_U_PLAT_GROUP_NR`).
const PLAT_GROUPS: usize = 29;
/// Buckets in all (fio's `FIO_IO_U_PLAT_NR`): 1856.
pub const PLAT_NR: usize = PLAT_GROUPS * PLAT_VAL as usize;

/// fio's default `percentile_list` (fio-compat.md §2.1; fio's `options.c`).
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// The bucket of a latency of `value_ns` (fio's `plat_val_to_idx`).
pub fn val_to_idx(value_ns: u64) -> usize {
    let msb = if value_ns == 0 { 0 } else { 63 - value_ns.leading_zeros() };
    // Up to 2^(PLAT_BITS+1) − 1 every value has its own bucket.
    if msb <= PLAT_BITS {
        return value_ns as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) << PLAT_BITS) as usize;
    let offset = ((PLAT_VAL - 1) & (value_ns >> error_bits)) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// The value fio reports for bucket `index`: its midpoint (fio's `plat_idx_to_val`).
pub fn idx_to_val(index: usize) -> u64 {
    assert!(index < PLAT_NR, "fio has {PLAT_NR} latency buckets, not {index}");
    if index < (PLAT_VAL << 1) as usize {
        return index as u64;
    }
    let error_bits = (index as u32 >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = index as u64 % PLAT_VAL;
    // fio computes base + (k + 0.5) · 2^error_bits in floating point and truncates; with
    // error_bits ≥ 1 that is exact in integers.
    base + (((2 * k + 1) << error_bits) >> 1)
}

/// A latency histogram in fio's buckets: a dense array of fio's 1856 counters, as fio
/// keeps (`io_u_plat`), allocated at the first sample so a direction without I/O costs
/// nothing. Dense rather than a map because a sample is counted on every completion of
/// every run (issue 20: a map's insert was about a third of fio's per-completion
/// accounting); reading it (percentiles, json+'s bins) skips the empty buckets.
#[derive(Clone, Debug, Default)]
pub struct PlatHistogram {
    /// Per bucket, its count: empty until the first sample, then `PLAT_NR` long.
    counts: Vec<u64>,
}

impl PartialEq for PlatHistogram {
    /// Equal when every bucket holds the same count (an unallocated histogram equals an
    /// allocated one of zeros).
    fn eq(&self, other: &Self) -> bool {
        self.nonzero().eq(other.nonzero())
    }
}

impl Eq for PlatHistogram {}

impl PlatHistogram {
    /// Counts one latency.
    #[inline]
    pub fn add(&mut self, value_ns: u64) {
        if self.counts.is_empty() {
            self.counts = vec![0; PLAT_NR];
        }
        self.counts[val_to_idx(value_ns)] += 1;
    }

    /// Adds `other`'s counts (fio's `sum_thread_stats` adds the buckets).
    pub fn merge(&mut self, other: &PlatHistogram) {
        if other.counts.is_empty() {
            return;
        }
        if self.counts.is_empty() {
            self.counts = vec![0; PLAT_NR];
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
    }

    /// The non-empty buckets in order: (bucket index, count).
    fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts.iter().enumerate().filter(|&(_, &count)| count > 0).map(|(i, &c)| (i, c))
    }

    /// The non-empty buckets in order: (midpoint ns, count) — json+'s `bins`.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.nonzero().map(|(index, count)| (idx_to_val(index), count))
    }

    /// Samples counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// fio's `calc_clat_percentiles` over `samples` samples: for each percentile of `list`
    /// (sorted ascending, as fio sorts it), the midpoint of the first bucket at which the
    /// running count reaches p/100 · samples. Percentiles never reached are 0.
    pub fn percentiles(&self, list: &[f64], samples: u64) -> Vec<u64> {
        let mut values = vec![0; list.len()];
        let mut next = 0;
        let mut sum = 0u64;
        for (index, count) in self.nonzero() {
            sum += count;
            while next < list.len() && sum as f64 >= list[next] / 100.0 * samples as f64 {
                values[next] = idx_to_val(index);
                next += 1;
            }
            if next == list.len() {
                break;
            }
        }
        values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the index function against values worked out by hand from fio's definition:
    // below 128 ns a bucket per value; 128 (msb 7) starts group 2 at index 128; 200 =
    // 0b11001000 has msb 7, error bits 1, offset (200 >> 1) & 63 = 36, so index 164, whose
    // midpoint is 128 + 36.5·2 = 201; 1 000 000 ns has msb 19, error bits 13, offset
    // (1e6 >> 13) & 63 = 122 & 63 = 58, index (14 << 6) + 58 = 954, midpoint 2^19 + 58.5·2^13
    // = 1 003 520; the top bucket saturates.
    #[test]
    fn index_function_matches_hand_computed_values() {
        assert_eq!(val_to_idx(0), 0);
        assert_eq!(val_to_idx(127), 127);
        assert_eq!((val_to_idx(128), idx_to_val(128)), (128, 129));
        assert_eq!((val_to_idx(200), idx_to_val(164)), (164, 201));
        assert_eq!(val_to_idx(1_000_000), 954);
        assert_eq!(idx_to_val(954), 1_003_520);
        assert_eq!(val_to_idx(u64::MAX), PLAT_NR - 1);
        // The observed fio value 166 912 ns (§4.3) is a bucket midpoint.
        assert_eq!(idx_to_val(val_to_idx(166_912)), 166_912);
    }

    // Proves every bucket's midpoint falls back in its own bucket, and buckets are ordered
    // and within fio's 1/128 relative error of any value in them.
    #[test]
    fn midpoints_round_trip_and_are_ordered() {
        for index in 0..PLAT_NR - 1 {
            let value = idx_to_val(index);
            assert_eq!(val_to_idx(value), index, "bucket {index}");
            assert!(idx_to_val(index + 1) > value);
        }
        for value in [1_000u64, 12_345, 987_654_321] {
            let mid = idx_to_val(val_to_idx(value)) as f64;
            assert!((mid / value as f64 - 1.0).abs() <= 1.0 / 128.0, "{value}");
        }
    }

    // Proves fio's percentile rule: the first bucket where the running count reaches p% of N.
    // With 100 samples of 10 ns and 1 of 1000 ns, p99 is 10 (100 ≥ 99.99) and p99.99 too
    // (100 ≥ 100.99 is false, so it is the 1000 ns bucket's midpoint 1004).
    #[test]
    fn percentiles_follow_fio_running_count() {
        let mut histogram = PlatHistogram::default();
        for _ in 0..100 {
            histogram.add(10);
        }
        histogram.add(1000);
        let values = histogram.percentiles(&[50.0, 99.0, 99.99], 101);
        assert_eq!(values, [10, 10, idx_to_val(val_to_idx(1000))]);
        assert_eq!(idx_to_val(val_to_idx(1000)), 1004);
    }

    // Proves the dense counters read as the sparse map did: bins list only non-empty buckets,
    // in order, with their counts; merging adds bucket by bucket; merging or comparing with
    // a histogram that never counted anything changes nothing.
    #[test]
    fn bins_merge_and_equality_skip_empty_buckets() {
        let mut a = PlatHistogram::default();
        a.add(5_000);
        a.add(10);
        a.add(5_001);
        let mut b = PlatHistogram::default();
        b.add(10);
        b.add(1_000_000);
        let mut merged = a.clone();
        merged.merge(&b);
        merged.merge(&PlatHistogram::default());
        let five_k = idx_to_val(val_to_idx(5_000));
        assert_eq!(val_to_idx(5_000), val_to_idx(5_001), "one bucket holds both");
        assert_eq!(merged.bins().collect::<Vec<_>>(), [(10, 2), (five_k, 2), (1_003_520, 1)]);
        assert_eq!(merged.total(), 5);
        let mut empty = PlatHistogram::default();
        assert_eq!(empty, PlatHistogram::default());
        empty.merge(&merged);
        assert_eq!(empty, merged);
        assert_ne!(a, merged);
        let mut zeroed = PlatHistogram::default();
        zeroed.merge(&PlatHistogram::default());
        assert_eq!(zeroed.bins().count(), 0);
    }
}
