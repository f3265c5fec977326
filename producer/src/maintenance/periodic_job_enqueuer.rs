//! Recurring jobs: every enabled schedule whose `next_run_at` has come enqueues its job, once
//! per (schedule, due time). Every write is guarded by the schedule still being due at that
//! time and by that pair having no run record yet (`schedule_runs`' key), so a repeated or
//! overlapping tick writes nothing twice. The job's id is a fresh random ULID like any other:
//! an id derived from the schedule and due time could be computed by anyone, and an enqueue
//! token reads any job whose id it knows. After downtime a schedule runs once, not once per missed tick; the runs it
//! missed are counted on its run record and its `missed_runs`. A schedule installed by the
//! migration (`next_run_at` NULL) is only planned, from the tick's time.

use jobs_shared::job::ids::job_id;
use jobs_shared::job::job_type::JobType;
use jobs_shared::observe::log_line::{emit, event_line, fault, LogLevel};
use jobs_shared::schedule::cron_schedule::{names_zone, CronSchedule};
use jobs_store::jobs::Unsent;
use jobs_store::schedules::{schedule_fire, schedule_list_due, schedule_plan, Fire};
use serde_json::{json, Value};

use super::job_sender;
use super::tick::Tick;
use crate::time_zone_data;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    let now = tick.now_ms;
    let due = schedule_list_due(tick.db, now, tick.config.batch).await?;
    let mut statements = Vec::new();
    // Where each fired job's INSERT sits in `statements`: only those return job rows.
    let mut inserts = Vec::new();
    let (mut planned, mut fired, mut missed_total) = (0, 0, 0u64);
    // A zone's schedule waits for the next tick when the database cannot be read now (tried
    // once per tick).
    let mut zones_unreadable = false;
    for schedule in &due {
        if zones_unreadable && names_zone(&schedule.cron_expression) {
            continue;
        }
        let Ok(loaded) = time_zone_data::load_for(tick.env, &schedule.cron_expression).await else {
            let message = format_args!(
                "schedule {} names a zone; the database is unreadable",
                schedule.id
            );
            fault(LogLevel::Error, "periodic_job_enqueuer", message);
            zones_unreadable = true;
            continue;
        };
        let (cron, job_type) = match (
            CronSchedule::parse(&schedule.cron_expression, loaded.zones().as_ref()),
            JobType::parse(&schedule.job_type),
        ) {
            (Ok(cron), Some(job_type)) => (cron, job_type),
            // Both were validated when written; a row edited by hand is skipped, loudly.
            _ => {
                let message = format_args!(
                    "schedule {} ({}) is invalid, skipped",
                    schedule.id, schedule.name
                );
                fault(LogLevel::Error, "periodic_job_enqueuer", message);
                continue;
            }
        };
        match schedule.next_run_at {
            None => {
                if let Some(next) = cron.next_after(now) {
                    statements.push(schedule_plan(tick.db, schedule.id, next)?);
                    planned += 1;
                }
            }
            Some(due_at) => {
                let Some(catch_up) = cron.catch_up(due_at, now) else {
                    continue;
                };
                if catch_up.missed > 0 {
                    let fields = json!({
                        "schedule": schedule.name,
                        "due_at": jobs_shared::util::time_fmt::rfc3339(due_at),
                        "missed": catch_up.missed,
                    });
                    emit(&event_line("schedule.missed", LogLevel::Warn, fields));
                }
                let max_attempts = schedule
                    .max_attempts
                    .unwrap_or(job_type.spec().max_attempts);
                inserts.push(statements.len()); // fire's first statement: the job's INSERT
                let job_id = new_job_id(tick.now_ms)?;
                let fire = Fire {
                    schedule_id: schedule.id,
                    due_at,
                    job_id: &job_id,
                    job_type,
                    max_attempts,
                    catch_up,
                };
                statements.extend(schedule_fire(tick.db, &fire, tick.now_ms)?);
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

/// A fresh job id for a schedule's run at `now_ms`.
fn new_job_id(now_ms: i64) -> worker::Result<String> {
    let random = crate::random::bytes().map_err(|e| worker::Error::RustError(e.message))?;
    Ok(job_id(now_ms, u128::from_le_bytes(random)))
}
