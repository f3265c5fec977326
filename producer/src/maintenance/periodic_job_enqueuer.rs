//! Recurring jobs: every enabled schedule whose `next_run_at` has come enqueues its job, once
//! per (schedule, due time). Every write is guarded by the schedule still being due at that
//! time and by that pair having no run record yet (`schedule_runs`' key), so a repeated or
//! overlapping tick writes nothing twice. The job's id is a fresh random ULID like any other:
//! an id derived from the schedule and due time could be computed by anyone, and an enqueue
//! token reads any job whose id it knows. After downtime a schedule runs once, not once per missed tick; the runs it
//! missed are counted on its run record and its `missed_runs`. A schedule installed by the
//! migration (`next_run_at` NULL) is only planned, from the tick's time.

use jobs_shared::{job_id, CronSchedule, JobStatus, JobType};
use serde::Deserialize;
use serde_json::{json, Value};
use worker::{console_error, console_log, D1PreparedStatement};

use super::job_sender;
use super::Tick;
use crate::dispatch::{Unsent, UNSENT_COLUMNS};
use crate::job_store::num;

#[derive(Deserialize)]
struct DueSchedule {
    id: i64,
    name: String,
    #[serde(rename = "type")]
    job_type: String,
    cron_expression: String,
    max_attempts: Option<u32>,
    next_run_at: Option<i64>,
}

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    let now = tick.now_ms;
    let due: Vec<DueSchedule> = tick
        .db
        .prepare(
            "SELECT id, name, type, cron_expression, max_attempts, next_run_at FROM schedules \
             WHERE enabled = 1 AND (next_run_at IS NULL OR next_run_at <= ?1) \
             ORDER BY next_run_at LIMIT ?2",
        )
        .bind(&[num(now), num(tick.config.batch.into())])?
        .all()
        .await?
        .results()?;
    let mut statements = Vec::new();
    // Where each fired job's INSERT sits in `statements`: only those return job rows.
    let mut inserts = Vec::new();
    let (mut planned, mut fired, mut missed_total) = (0, 0, 0u64);
    for schedule in &due {
        let (cron, job_type) = match (
            CronSchedule::parse(&schedule.cron_expression),
            JobType::parse(&schedule.job_type),
        ) {
            (Ok(cron), Some(job_type)) => (cron, job_type),
            // Both were validated when written; a row edited by hand is skipped, loudly.
            _ => {
                console_error!(
                    "schedule {} ({}) is invalid, skipped",
                    schedule.id,
                    schedule.name
                );
                continue;
            }
        };
        match schedule.next_run_at {
            None => {
                if let Some(next) = cron.next_after(now) {
                    statements.push(plan(tick, schedule.id, next)?);
                    planned += 1;
                }
            }
            Some(due_at) => {
                let Some(catch_up) = cron.catch_up(due_at, now) else {
                    continue;
                };
                if catch_up.missed > 0 {
                    let line = json!({
                        "event": "schedule.missed",
                        "schedule": schedule.name,
                        "due_at": jobs_shared::rfc3339(due_at),
                        "missed": catch_up.missed,
                    });
                    console_log!("{line}");
                }
                let max_attempts = schedule
                    .max_attempts
                    .unwrap_or(job_type.spec().max_attempts);
                inserts.push(statements.len()); // fire's first statement: the job's INSERT
                statements.extend(fire(
                    tick,
                    schedule.id,
                    job_type,
                    max_attempts,
                    due_at,
                    catch_up,
                )?);
                fired += 1;
                missed_total += u64::from(catch_up.missed);
            }
        }
    }
    if statements.is_empty() {
        return Ok(json!({ "planned": 0, "fired": 0 }));
    }
    let results = tick.db.batch(statements).await?;
    let mut enqueued: Vec<Unsent> = Vec::new();
    for i in inserts {
        enqueued.extend(results[i].results::<Unsent>()?);
    }
    let sent = job_sender::send(tick, &enqueued).await?;
    Ok(json!({
        "planned": planned,
        "fired": fired,
        "enqueued": enqueued.len(),
        "missed": missed_total,
        "sent": sent,
    }))
}

/// First plan of a schedule nobody has planned yet.
fn plan(tick: &Tick<'_>, id: i64, next: i64) -> worker::Result<D1PreparedStatement> {
    tick.db
        .prepare("UPDATE schedules SET next_run_at = ?2 WHERE id = ?1 AND next_run_at IS NULL AND enabled = 1")
        .bind(&[num(id), num(next)])
}

/// The run due at `due_at`: its job, its record, and the schedule's next due time, each
/// guarded by the schedule still being due at `due_at` (the compare-and-set).
fn fire(
    tick: &Tick<'_>,
    id: i64,
    job_type: JobType,
    max_attempts: u32,
    due_at: i64,
    catch_up: jobs_shared::CatchUp,
) -> worker::Result<[D1PreparedStatement; 3]> {
    let now = tick.now_ms;
    let random = crate::random::bytes().map_err(|e| worker::Error::RustError(e.message))?;
    let new_id = job_id(now, u128::from_le_bytes(random));
    let still_due = "FROM schedules WHERE id = ?1 AND next_run_at = ?2 AND enabled = 1";
    let not_run = "NOT EXISTS (SELECT 1 FROM schedule_runs WHERE schedule_id = ?1 AND due_at = ?2)";
    let queued = JobStatus::Queued.as_str();
    let insert_job = tick
        .db
        .prepare(format!(
            "INSERT INTO jobs (id, type, family, status, priority, payload, dedup_key, attempts, \
             max_attempts, run_at, created_at, updated_at) \
             SELECT ?3, type, ?4, '{queued}', priority, payload, dedup_key, 0, ?5, ?6, ?6, ?6 \
             {still_due} AND {not_run} ON CONFLICT DO NOTHING RETURNING {UNSENT_COLUMNS}"
        ))
        .bind(&[
            num(id),
            num(due_at),
            new_id.as_str().into(),
            job_type.family().as_str().into(),
            num(max_attempts.into()),
            num(now),
        ])?;
    let record = tick
        .db
        .prepare(format!(
            "INSERT INTO schedule_runs (schedule_id, due_at, fired_at, job_id, missed) \
             SELECT id, ?2, ?3, (SELECT id FROM jobs WHERE id = ?4), ?5 {still_due} \
             ON CONFLICT DO NOTHING"
        ))
        .bind(&[
            num(id),
            num(due_at),
            num(now),
            new_id.as_str().into(),
            num(catch_up.missed.into()),
        ])?;
    let advance = tick
        .db
        .prepare(
            "UPDATE schedules SET next_run_at = ?3, last_run_at = ?4, missed_runs = missed_runs + ?5 \
             WHERE id = ?1 AND next_run_at = ?2 AND enabled = 1",
        )
        .bind(&[
            num(id),
            num(due_at),
            num(catch_up.next_ms),
            num(now),
            num(catch_up.missed.into()),
        ])?;
    Ok([insert_job, record, advance])
}
