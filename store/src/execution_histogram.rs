//! The `execution_histogram` table: run durations pre-aggregated per type, family, outcome and
//! bucket (shared `observe::execution_histogram`), rolled up from the attempts
//! ([`crate::attempts`]) by the sweep up to a watermark kept in `metric_counters`.

use jobs_shared::observe::execution_histogram::HistogramRow;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

/// The whole histogram (rows: shared [`HistogramRow`]).
pub fn histogram_list(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    sql!(db, HistogramRow =>
        "SELECT job_type, family, status, bucket, count, sum_ms FROM execution_histogram")
}

#[derive(Deserialize)]
struct Watermark {
    value: i64,
}

pub async fn histogram_watermark_get(db: &D1Database) -> worker::Result<Option<i64>> {
    let rows: Vec<Watermark> = sql!(db, Watermark =>
        "SELECT value FROM metric_counters \
         WHERE name = 'watermark' AND label = 'execution_histogram'")?
    .all()
    .await?
    .results()?;
    Ok(rows.first().map(|w| w.value))
}

/// Adds the attempts that ended in [`from`, `until`) to the histogram, and moves the watermark
/// from `from` to `until`: two statements for one batch, both guarded by the watermark still
/// being `from`, so an overlapping or repeated roll-up adds nothing twice.
///
/// The attempts are [`crate::attempts`]' stream (the failed runs through `job_runs_failed`, and
/// each success of the success batches, through the view `success_attempts`), of which it reads
/// the type, family, outcome and duration; the bucket is shared `bucket_of`, written out (a test holds the two equal).
pub fn histogram_add_span(
    db: &D1Database,
    from: i64,
    until: i64,
) -> worker::Result<[D1PreparedStatement; 2]> {
    let add = sql!(
        db,
        "INSERT INTO execution_histogram (job_type, family, status, bucket, count, sum_ms) \
         SELECT a.type, a.family, a.outcome, \
         CASE WHEN a.duration_ms <= 5 THEN 0 WHEN a.duration_ms <= 10 THEN 1 \
         WHEN a.duration_ms <= 25 THEN 2 WHEN a.duration_ms <= 50 THEN 3 \
         WHEN a.duration_ms <= 100 THEN 4 WHEN a.duration_ms <= 250 THEN 5 \
         WHEN a.duration_ms <= 500 THEN 6 WHEN a.duration_ms <= 1000 THEN 7 \
         WHEN a.duration_ms <= 2500 THEN 8 WHEN a.duration_ms <= 5000 THEN 9 \
         WHEN a.duration_ms <= 10000 THEN 10 WHEN a.duration_ms <= 30000 THEN 11 \
         WHEN a.duration_ms <= 60000 THEN 12 WHEN a.duration_ms <= 300000 THEN 13 \
         WHEN a.duration_ms <= 900000 THEN 14 ELSE 15 END AS bucket, \
         COUNT(*), SUM(a.duration_ms) \
         FROM (SELECT j.family, j.type, r.outcome, r.duration_ms \
           FROM job_runs r INDEXED BY job_runs_failed JOIN jobs j ON j.id = r.job_id \
           WHERE r.outcome <> 'succeeded' AND r.finished_at >= ?1 AND r.finished_at < ?2 \
           UNION ALL \
           SELECT family, type, 'succeeded', duration_ms FROM success_attempts \
           WHERE finished_at >= ?1 AND finished_at < ?2) a \
         WHERE (SELECT value FROM metric_counters \
           WHERE name = 'watermark' AND label = 'execution_histogram') = ?1 \
         GROUP BY a.type, a.family, a.outcome, bucket \
         ON CONFLICT (job_type, family, status, bucket) DO UPDATE SET \
         count = count + excluded.count, sum_ms = sum_ms + excluded.sum_ms",
        from,
        until
    )?;
    let advance = sql!(
        db,
        "UPDATE metric_counters SET value = ?2 \
         WHERE name = 'watermark' AND label = 'execution_histogram' AND value = ?1",
        from,
        until
    )?;
    Ok([add, advance])
}

#[cfg(test)]
mod tests {
    use jobs_shared::observe::execution_histogram::DURATION_BUCKETS_MS;

    /// SQL giving the (non-cumulative) bucket index of `column` (ms), as shared `bucket_of`; the
    /// last index is +Inf.
    fn bucket_sql(column: &str) -> String {
        let arms: Vec<String> = DURATION_BUCKETS_MS
            .iter()
            .enumerate()
            .map(|(i, le)| format!("WHEN {column} <= {le} THEN {i}"))
            .collect();
        format!(
            "CASE {} ELSE {} END",
            arms.join(" "),
            DURATION_BUCKETS_MS.len()
        )
    }

    #[test]
    fn bucket_sql_names_every_bound() {
        let sql = bucket_sql("d");
        assert!(
            sql.starts_with("CASE WHEN d <= 5 THEN 0 WHEN d <= 10 THEN 1 "),
            "{sql}"
        );
        assert!(
            sql.ends_with("WHEN d <= 900000 THEN 14 ELSE 15 END"),
            "{sql}"
        );
    }

    /// The roll-up's literal spells the shared buckets out: this holds it to them.
    #[test]
    fn roll_up_buckets_are_the_shared_ones() {
        let source = include_str!("execution_histogram.rs");
        // The source's string literals as Rust reads them: a `\` at a line's end joins it to
        // the next line's text.
        let joined = source
            .split("\\\n")
            .map(str::trim_start)
            .collect::<String>();
        let case = bucket_sql("a.duration_ms");
        assert!(joined.contains(&format!("{case} AS bucket")), "{case}");
    }
}
