//! The `execution_histogram` table: run durations pre-aggregated per type, family, outcome and
//! bucket (shared `observe::execution_histogram`), rolled up from the attempts
//! ([`crate::attempts`]) by the sweep up to a watermark kept in `metric_counters`.

use jobs_shared::observe::execution_histogram::DURATION_BUCKETS_MS;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use crate::attempts::attempts_sql;
use crate::d1::num;

/// The whole histogram (rows: shared `HistogramRow`).
pub fn histogram_list(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    db.prepare("SELECT job_type, family, status, bucket, count, sum_ms FROM execution_histogram")
        .bind(&[])
}

/// The roll-up's watermark in `metric_counters` (migration 0006 starts it at the migration
/// time): attempts that ended before it are in the histogram.
pub(crate) const WATERMARK: &str = "name = 'watermark' AND label = 'execution_histogram'";

#[derive(Deserialize)]
struct Watermark {
    value: i64,
}

pub async fn histogram_watermark_get(db: &D1Database) -> worker::Result<Option<i64>> {
    let rows: Vec<Watermark> = db
        .prepare(format!(
            "SELECT value FROM metric_counters WHERE {WATERMARK}"
        ))
        .all()
        .await?
        .results()?;
    Ok(rows.first().map(|w| w.value))
}

/// Adds the attempts that ended in [`from`, `until`) to the histogram, and moves the watermark
/// from `from` to `until`: two statements for one batch, both guarded by the watermark still
/// being `from`, so an overlapping or repeated roll-up adds nothing twice.
pub fn histogram_add_span(
    db: &D1Database,
    from: i64,
    until: i64,
) -> worker::Result<[D1PreparedStatement; 2]> {
    let span = [num(from), num(until)];
    let add = db
        .prepare(format!(
            "INSERT INTO execution_histogram (job_type, family, status, bucket, count, sum_ms) \
             SELECT a.type, a.family, a.outcome, {bucket} AS bucket, COUNT(*), SUM(a.duration_ms) \
             FROM ({attempts}) a WHERE (SELECT value FROM metric_counters WHERE {WATERMARK}) = ?1 \
             GROUP BY a.type, a.family, a.outcome, bucket \
             ON CONFLICT (job_type, family, status, bucket) DO UPDATE SET \
             count = count + excluded.count, sum_ms = sum_ms + excluded.sum_ms",
            bucket = bucket_sql("a.duration_ms"),
            attempts = attempts_sql("?1", Some("?2")),
        ))
        .bind(&span)?;
    let advance = db
        .prepare(format!(
            "UPDATE metric_counters SET value = ?2 WHERE {WATERMARK} AND value = ?1"
        ))
        .bind(&span)?;
    Ok([add, advance])
}

/// SQL giving the (non-cumulative) bucket index of `column` (ms), as shared `bucket_of`; the
/// last index is +Inf.
pub(crate) fn bucket_sql(column: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
