//! Rolls the attempts (failed runs, success batches) up into `execution_histogram` (GET
//! /metrics' `job_execution_duration_seconds`) once a tick, instead of the consumer writing
//! it: the consumer's record batch stays at its rows per job (the benchmark's target), and a
//! tick writes one row per (type, family, outcome, bucket) that saw attempts, whatever their
//! number. The span is the attempts' end times from the watermark up to `now - ROLLUP_LAG_MS`
//! (no attempt can still appear in it; shared `execution_histogram`), at most an hour per
//! tick. The add and the watermark's advance are one transaction, guarded by the watermark read, so an overlapping or repeated tick adds nothing
//! twice. The histogram trails real time by the lag; Analytics Engine has it live.

use jobs_shared::observe::execution_histogram::rollup_span;
use jobs_store::execution_histogram::{histogram_add_span, histogram_watermark_get};
use serde_json::{json, Value};

use super::tick::Tick;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    let watermark = histogram_watermark_get(tick.db).await?;
    let Some((from, until)) = watermark.and_then(|w| rollup_span(w, tick.now_ms)) else {
        return Ok(Value::Null);
    };
    let results = tick
        .db
        .batch(histogram_add_span(tick.db, from, until)?.into())
        .await?;
    let written = results[0].meta()?.and_then(|m| m.rows_written).unwrap_or(0);
    Ok(json!({ "until": jobs_shared::util::time_fmt::rfc3339(until), "rows_written": written }))
}
