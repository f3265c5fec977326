//! The `job_execution_duration_seconds` histogram (README "GET /metrics"), pre-aggregated in D1 table
//! `execution_histogram` (counts per type, family, outcome and bucket). The sweep rolls the
//! attempts' records up into it once a tick, so the consumer's hot path writes nothing more, and GET
//! /metrics reads a table bounded by types x families x outcomes x buckets, never by the number
//! of jobs. Counts only ever grow, as Prometheus counters must.

use serde::Deserialize;

/// Upper bounds of the buckets, in ms (the last, +Inf, is implicit). Fixed: the stored bucket
/// index means this list, so it may only ever be appended to.
pub const DURATION_BUCKETS_MS: [i64; 15] = [
    5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000,
];

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
