//! Retention: finished jobs and their run records are deleted once old enough, succeeded
//! (and cancelled or skipped) ones after `RETAIN_SUCCEEDED_DAYS`, dead ones after
//! `RETAIN_DEAD_DAYS`; schedule run records after the former. Live jobs are never touched.
//! One batch (one transaction) per tick, at most `SWEEP_BATCH` jobs.

use jobs_shared::JobStatus;
use serde_json::{json, Value};

use super::Tick;
use crate::job_store::num;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    let done = jobs_shared::sql_in_list(&[
        JobStatus::Succeeded,
        JobStatus::Cancelled,
        JobStatus::Skipped,
    ]);
    let dead = JobStatus::Dead.as_str();
    // The same rows for every statement: nothing else in the transaction changes `jobs`
    // before the last one.
    let old = format!(
        "SELECT id FROM jobs WHERE status IN ({done}) AND finished_at < ?1 \
         UNION ALL SELECT id FROM jobs WHERE status = '{dead}' AND finished_at < ?2 LIMIT ?3"
    );
    let params = [
        num(tick.now_ms - tick.config.retain_succeeded_ms),
        num(tick.now_ms - tick.config.retain_dead_ms),
        num(tick.config.batch.into()),
    ];
    let statements = [
        format!("DELETE FROM job_runs WHERE job_id IN ({old})"),
        format!("DELETE FROM dead_letters WHERE job_id IN ({old})"),
        format!("DELETE FROM jobs WHERE id IN ({old})"),
    ]
    .iter()
    .map(|sql| tick.db.prepare(sql).bind(&params))
    .chain(std::iter::once(
        tick.db
            .prepare(
                "DELETE FROM schedule_runs WHERE (schedule_id, due_at) IN \
                 (SELECT schedule_id, due_at FROM schedule_runs WHERE fired_at < ?1 LIMIT ?2)",
            )
            .bind(&[params[0].clone(), params[2].clone()]),
    ))
    .collect::<worker::Result<Vec<_>>>()?;
    let results = tick.db.batch(statements).await?;
    let changes = |i: usize| {
        results[i]
            .meta()
            .ok()
            .flatten()
            .and_then(|m| m.changes)
            .unwrap_or(0)
    };
    Ok(json!({ "jobs": changes(2), "runs": changes(0), "schedule_runs": changes(3) }))
}
