//! Lease rescue (seed 004's release of expired leases, seed 002's reset of stuck jobs): a
//! `running` job whose lease ran out lost its worker. The lost attempt gets its run record
//! (`lease_expired`); the job goes back to its queue, or `dead` if that was its last attempt.
//! The lease length is the family's (shared `Family::lease_secs`), the same one the consumer
//! claims with. A late outcome from a worker that was only slow is refused by the consumer's
//! (status, run) guard. Each rescue is logged as `job.interrupted` (and `job.exhausted` when
//! the job is dead), in the consumer's log schema. A backlog of expired leases is worked
//! through in pages within the tick (`paging.rs`).

use jobs_shared::job::lease::LOST_ATTEMPT;
use jobs_shared::observe::job_event::{job_event, JobEventKind, JobRef};
use jobs_shared::{ErrorClass, Family, JobError, JobStatus};
use jobs_store::jobs::{job_rescue_expired, Rescued, Unsent};
use serde_json::{json, Value};
use worker::{console_error, console_warn, Env};

use super::job_sender;
use super::paging::{self, Page};
use super::Tick;
use jobs_shared::util::queue_send::{send_to, Outgoing};

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    paging::pages(tick, || page(tick)).await
}

/// One page: its jobs leave `running` whatever their sends do (a failed send leaves a job in
/// the outbox), so the next page finds others.
async fn page(tick: &Tick<'_>) -> worker::Result<Page> {
    let dead = JobStatus::Dead.as_str();
    let statements = job_rescue_expired(tick.db, tick.now_ms, tick.config.page)?;
    let results = tick.db.batch(statements.into()).await?;
    let rescued: Vec<Rescued> = results[1].results()?;
    let rows = rescued.len();
    rescued.iter().for_each(|r| log(r, tick.now_ms, dead));
    let (dead_jobs, requeued): (Vec<Rescued>, Vec<Rescued>) =
        rescued.into_iter().partition(|r| r.status == dead);
    let requeued: Vec<Unsent> = requeued.into_iter().map(|r| r.job).collect();
    let sent = job_sender::send(tick, &requeued).await?;
    dead_letter(tick.env, &dead_jobs).await;
    Ok(Page {
        rows,
        all_sent: true,
        report: json!({ "requeued": requeued.len(), "sent": sent, "dead": dead_jobs.len() }),
    })
}

/// Dead jobs go to their family's DLQ as the consumer's do, so D1 and the DLQ agree.
async fn dead_letter(env: &Env, jobs: &[Rescued]) {
    let outgoing: Vec<_> = jobs
        .iter()
        .filter_map(|r| {
            let job = &r.job;
            Outgoing::stored(
                &job.id,
                &job.job_type,
                &job.family,
                0,
                job.correlation_id.as_deref(),
            )
        })
        .collect();
    send_to(env, &outgoing, Family::dlq_binding).await;
}

/// `job.interrupted` for the lost attempt, then `job.exhausted` if it was the last.
fn log(r: &Rescued, now_ms: i64, dead: &str) {
    let job = JobRef {
        id: &r.job.id,
        job_type: &r.job.job_type,
        queue: &r.job.family,
        attempt: r.attempts,
        correlation_id: r.job.correlation_id.as_deref().unwrap_or(&r.job.id),
    };
    let error = JobError::new(ErrorClass::LeaseExpired, LOST_ATTEMPT);
    let duration = r.started_at.map(|at| now_ms - at);
    let interrupted = job_event(JobEventKind::Interrupted, &job, duration, Some(&error), &[]);
    console_error!("{interrupted}");
    if r.status == dead {
        console_error!(
            "{}",
            job_event(JobEventKind::Exhausted, &job, None, Some(&error), &[])
        );
    } else {
        console_warn!(
            "{}",
            job_event(JobEventKind::RetryScheduled, &job, None, Some(&error), &[])
        );
    }
}
