//! Rolls the run records up into `execution_histogram` (GET /metrics'
//! `job_execution_duration_seconds`) once a tick, instead of the consumer writing it: the
//! consumer's record batch stays at its rows per job (the benchmark's target), and a tick
//! writes one row per (type, family, outcome, bucket) that saw runs, whatever their number.
//! The span is the run end times from the watermark up to `now - ROLLUP_LAG_MS` (no run record
//! can still appear in it; shared `execution_histogram`), at most an hour per tick, read
//! through the index on `job_runs.finished_at`. The add and the watermark's advance are one
//! transaction, guarded by the watermark read, so an overlapping or repeated tick adds nothing
//! twice. The histogram trails real time by the lag; Analytics Engine has it live.

use jobs_shared::observe::execution_histogram::{bucket_sql, rollup_span};
use serde::Deserialize;
use serde_json::{json, Value};

use super::Tick;
use crate::job_store::num;

/// The watermark's row in `metric_counters` (migration 0006 starts it at the migration time).
const WATERMARK: &str = "name = 'watermark' AND label = 'execution_histogram'";

#[derive(Deserialize)]
struct Watermark {
    value: i64,
}

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    let rows: Vec<Watermark> = tick
        .db
        .prepare(format!(
            "SELECT value FROM metric_counters WHERE {WATERMARK}"
        ))
        .all()
        .await?
        .results()?;
    let Some((from, until)) = rows.first().and_then(|w| rollup_span(w.value, tick.now_ms)) else {
        return Ok(Value::Null);
    };
    let span = [num(from), num(until)];
    let add = tick
        .db
        .prepare(format!(
            "INSERT INTO execution_histogram (job_type, family, status, bucket, count, sum_ms) \
             SELECT j.type, j.family, r.outcome, {bucket} AS bucket, COUNT(*), SUM(r.duration_ms) \
             FROM job_runs r JOIN jobs j ON j.id = r.job_id \
             WHERE r.finished_at >= ?1 AND r.finished_at < ?2 \
             AND (SELECT value FROM metric_counters WHERE {WATERMARK}) = ?1 \
             GROUP BY j.type, j.family, r.outcome, bucket \
             ON CONFLICT (job_type, family, status, bucket) DO UPDATE SET \
             count = count + excluded.count, sum_ms = sum_ms + excluded.sum_ms",
            bucket = bucket_sql("r.duration_ms"),
        ))
        .bind(&span)?;
    let advance = tick
        .db
        .prepare(format!(
            "UPDATE metric_counters SET value = ?2 WHERE {WATERMARK} AND value = ?1"
        ))
        .bind(&span)?;
    let results = tick.db.batch(vec![add, advance]).await?;
    let written = results[0].meta()?.and_then(|m| m.rows_written).unwrap_or(0);
    Ok(json!({ "until": jobs_shared::rfc3339(until), "rows_written": written }))
}
