//! The `job_execution_duration_seconds` histogram (docs/operating.md "GET /metrics"),
//! pre-aggregated in D1 table `execution_histogram` (counts per type, family, outcome and bucket).
//! The sweep rolls the attempts' records up into it once a tick, so the consumer's hot path writes
//! nothing more, and GET /metrics reads a table bounded by types x families x outcomes x buckets,
//! never by the number of jobs. Counts only ever grow, as Prometheus counters must.

use serde::Deserialize;

/// Upper bounds of the buckets, in ms (the last, +Inf, is implicit). Fixed: the stored bucket
/// index means this list, so it may only ever be appended to.
pub const DURATION_BUCKETS_MS: [i64; 15] = [
    5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000,
];

/// How many buckets a duration falls into, +Inf included.
pub const BUCKETS: usize = DURATION_BUCKETS_MS.len() + 1;

/// The (non-cumulative) bucket of a duration: the first whose bound holds it, else +Inf.
pub fn bucket_of(duration_ms: i64) -> usize {
    DURATION_BUCKETS_MS
        .iter()
        .position(|le| duration_ms <= *le)
        .unwrap_or(DURATION_BUCKETS_MS.len())
}

/// The `p`th percentile (nearest rank) of durations counted by bucket, estimated as
/// Prometheus's `histogram_quantile` does: linearly within the bucket the rank falls in,
/// never past `max_ms` (the largest duration counted, which also bounds +Inf).
pub fn percentile(counts: &[i64; BUCKETS], p: i64, max_ms: i64) -> Option<i64> {
    let n: i64 = counts.iter().sum();
    let rank = (n * p + 99) / 100;
    let mut below = 0;
    for (i, count) in counts.iter().enumerate() {
        if *count > 0 && below + count >= rank {
            let low = if i == 0 {
                0
            } else {
                DURATION_BUCKETS_MS[i - 1]
            };
            let high = DURATION_BUCKETS_MS
                .get(i)
                .copied()
                .unwrap_or(max_ms)
                .min(max_ms);
            let at = low + (high - low).max(0) * (rank - below) / count;
            return Some(at.min(max_ms));
        }
        below += count;
    }
    None
}

/// How long after its end an attempt's record may still appear: the consumer records a batch's
/// outcomes once all its handlers are done, and never after the attempt's lease (at most the
/// low and bulk families' 15 minutes; the rescuer's records appear at once). Runs that ended
/// longer ago than this are final, so a roll-up up to `now - ROLLUP_LAG_MS` misses none.
pub const ROLLUP_LAG_MS: i64 = 15 * 60 * 1000 + 60_000;

/// The longest span one roll-up covers, so catching up after downtime stays a bounded read.
pub const ROLLUP_MAX_SPAN_MS: i64 = 60 * 60 * 1000;

/// The span of run end times the roll-up at `now_ms` adds, from the stored watermark.
pub fn rollup_span(watermark_ms: i64, now_ms: i64) -> Option<(i64, i64)> {
    let until = (now_ms - ROLLUP_LAG_MS).min(watermark_ms + ROLLUP_MAX_SPAN_MS);
    (until > watermark_ms).then_some((watermark_ms, until))
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct HistogramRow {
    pub job_type: String,
    pub family: String,
    pub status: String,
    pub bucket: i64,
    pub count: i64,
    pub sum_ms: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_fall_in_the_first_bucket_that_holds_them() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(5), 0);
        assert_eq!(bucket_of(6), 1);
        assert_eq!(bucket_of(900_000), BUCKETS - 2);
        assert_eq!(bucket_of(900_001), BUCKETS - 1);
    }

    #[test]
    fn percentiles_interpolate_within_the_rank_s_bucket_up_to_the_max() {
        let mut counts = [0; BUCKETS];
        assert_eq!(percentile(&counts, 50, 0), None);
        // 10 durations in (50, 100], 10 in (100, 250]; the largest is 180.
        counts[bucket_of(60)] = 10;
        counts[bucket_of(120)] = 10;
        assert_eq!(percentile(&counts, 50, 180), Some(100));
        assert_eq!(percentile(&counts, 25, 180), Some(75));
        assert_eq!(
            percentile(&counts, 95, 180),
            Some(172),
            "(100, 250] read as (100, 180]"
        );
        assert_eq!(percentile(&counts, 100, 180), Some(180));
        // Noop jobs: every duration 0.
        let mut zeros = [0; BUCKETS];
        zeros[0] = 100;
        assert_eq!(percentile(&zeros, 95, 0), Some(0));
        // +Inf is bounded by the max.
        let mut slow = [0; BUCKETS];
        slow[BUCKETS - 1] = 2;
        assert_eq!(percentile(&slow, 50, 1_000_000), Some(950_000));
    }

    #[test]
    fn rollups_lag_and_are_bounded() {
        let now = 10 * ROLLUP_MAX_SPAN_MS;
        assert_eq!(rollup_span(now - ROLLUP_LAG_MS, now), None);
        assert_eq!(
            rollup_span(now - ROLLUP_LAG_MS - 5, now),
            Some((now - ROLLUP_LAG_MS - 5, now - ROLLUP_LAG_MS))
        );
        assert_eq!(rollup_span(0, now), Some((0, ROLLUP_MAX_SPAN_MS)));
    }
}
