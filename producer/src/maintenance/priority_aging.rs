//! Priority aging (seed 002): a job waiting more than an hour past its due time gains +10
//! priority every 5 minutes, up to 100 (`aged_at` keeps the pace however often ticks run).
//! Queues are FIFO, so priority alone cannot overtake a backlog: a job waiting in a lower
//! family whose priority reaches the next family's threshold (`Family::admit_priority`) is
//! moved there and sent to that queue. Its old message is then stale; the consumer acks it as
//! superseded because a claim must come from the job's current family. A job a pause covers,
//! or holds, is never promoted: a new family would take it out of its pause (it still gains
//! priority, and moves once resumed).

use jobs_shared::{
    Family, JobStatus, AGING_AFTER_MS, AGING_EVERY_MS, AGING_STEP, MAX_PRIORITY, PAUSED_JOB_SQL,
};
use serde_json::{json, Value};

use super::job_sender;
use super::Tick;
use crate::dispatch::{Unsent, UNSENT_COLUMNS};
use crate::job_store::num;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    let waiting = jobs_shared::sql_in_list(&[JobStatus::Queued, JobStatus::Retrying]);
    let starving = format!("status IN ({waiting}) AND run_at <= ?1 - {AGING_AFTER_MS}");
    let params = [num(tick.now_ms), num(tick.config.batch.into())];
    let mut statements = vec![tick
        .db
        .prepare(format!(
            "UPDATE jobs SET priority = MIN({MAX_PRIORITY}, priority + {AGING_STEP}), aged_at = ?1, \
             updated_at = ?1 WHERE id IN (SELECT id FROM jobs WHERE {starving} \
             AND priority < {MAX_PRIORITY} AND (aged_at IS NULL OR aged_at <= ?1 - {AGING_EVERY_MS}) \
             ORDER BY run_at LIMIT ?2)"
        ))
        .bind(&params)?];
    // Highest target first, so a job climbs at most one family per tick.
    let mut steps: Vec<(Family, Family, u8)> = Family::ALL
        .into_iter()
        .filter_map(|from| {
            from.promotion()
                .map(|(to, threshold)| (from, to, threshold))
        })
        .collect();
    steps.sort_by_key(|(_, to, _)| to.priority());
    for (from, to, threshold) in &steps {
        statements.push(
            tick.db
                .prepare(format!(
                    "UPDATE jobs SET family = '{to}', sent_at = NULL, updated_at = ?1 WHERE id IN \
                     (SELECT id FROM jobs WHERE family = '{from}' AND {starving} AND priority >= {threshold} \
                     AND held_at IS NULL AND NOT {PAUSED_JOB_SQL} \
                     ORDER BY priority DESC, run_at LIMIT ?2) RETURNING {UNSENT_COLUMNS}",
                    to = to.as_str(),
                    from = from.as_str(),
                ))
                .bind(&params)?,
        );
    }
    let results = tick.db.batch(statements).await?;
    let aged = results[0].meta()?.and_then(|m| m.changes).unwrap_or(0);
    let mut promoted: Vec<Unsent> = Vec::new();
    for result in &results[1..] {
        promoted.extend(result.results::<Unsent>()?);
    }
    let sent = job_sender::send(tick, &promoted).await?;
    Ok(json!({ "raised": aged, "promoted": promoted.len(), "sent": sent }))
}
