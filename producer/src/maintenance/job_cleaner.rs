//! Retention: finished jobs and their run records are deleted once old enough, succeeded
//! (and cancelled or skipped) ones after `RETAIN_SUCCEEDED_DAYS`, dead ones after
//! `RETAIN_DEAD_DAYS`; schedule run records after the former; the charts' per-minute rows after
//! `RETAIN_HISTORY_DAYS`; success batches once out of the windows over attempts and rolled
//! into the histogram; the invocations' shared run details once no job kept can name them; a flow
//! control key's counts once none of its jobs has run for `RETAIN_SUCCEEDED_DAYS`. Live jobs are
//! never touched. One batch (one transaction) per tick, at most `SWEEP_BATCH` rows of
//! each.

use jobs_shared::observe::last_hour::WINDOW_MS;
use jobs_store::flow_keys::flow_key_delete_before;
use jobs_store::job_minutes::job_minute_delete_before;
use jobs_store::jobs::job_delete_finished;
use jobs_store::schedules::schedule_run_delete_before;
use jobs_store::success_batches::success_batch_delete_before;
use serde_json::{json, Value};

use super::tick::Tick;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    let succeeded_before = tick.now_ms - tick.config.retain_succeeded_ms;
    let dead_before = tick.now_ms - tick.config.retain_dead_ms;
    let batch = tick.config.batch;
    let mut statements = Vec::from(job_delete_finished(
        tick.db,
        succeeded_before,
        dead_before,
        batch,
    )?);
    statements.push(schedule_run_delete_before(
        tick.db,
        succeeded_before,
        batch,
    )?);
    let history_before = tick.now_ms - tick.config.retain_history_ms;
    statements.push(job_minute_delete_before(tick.db, history_before, batch)?);
    statements.push(success_batch_delete_before(
        tick.db,
        tick.now_ms - WINDOW_MS,
        batch,
    )?);
    statements.push(flow_key_delete_before(tick.db, succeeded_before, batch)?);
    let results = tick.db.batch(statements).await?;
    let changes = |i: usize| {
        results[i]
            .meta()
            .ok()
            .flatten()
            .and_then(|m| m.changes)
            .unwrap_or(0)
    };
    Ok(json!({
        "jobs": changes(2), "runs": changes(0), "invocations": changes(3),
        "schedule_runs": changes(4), "minutes": changes(5), "success_batches": changes(6),
        "flow_keys": changes(7),
    }))
}
