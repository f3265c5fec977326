//! Lease rescue: a `running` job whose lease ran out lost its worker. The lost attempt gets
//! its run record (`lease_expired`), and what follows is decided by the same `decide()` as
//! every failed attempt (`after_lost_attempt`): back to its queue at once, or `dead` if that was
//! its last attempt, failing the chain it is a step of. The lease is the one the consumer
//! claimed with (`lease.rs`). A late outcome from a worker that was only slow is refused by the
//! consumer's (status, run) guard. Each rescue is logged as `job.interrupted` (and
//! `job.exhausted` when the job is dead), in the consumer's log schema. A backlog of expired
//! leases is worked through in pages within the tick (`paging.rs`).

use jobs_shared::job::chain::failed_chain_of_dead_step;
use jobs_shared::job::job_outcome::Decision;
use jobs_shared::job::lease::{after_lost_attempt, LOST_ATTEMPT};
use jobs_shared::job::lifecycle::JobStatus;
use jobs_shared::observe::job_event::{job_event, JobEventKind, JobRef};
use jobs_shared::observe::log_line::emit;
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use jobs_shared::runtime::queue_send::{send_to, Destination, Outgoing};
use jobs_store::jobs::{
    job_list_expired, job_rescue_many, DeadStepChain, Expired, LostMove, Rescued, Unsent,
};
use serde_json::{json, Value};
use worker::Env;

use super::job_sender;
use super::paging::{self, Page};
use super::tick::Tick;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    paging::pages(tick, || page(tick)).await
}

/// One page: the expired leases it reads are each decided by `after_lost_attempt` (the same
/// `decide()` as every failed attempt), then written in one batch: the lost attempts' run
/// records, each job's move (guarded by its run, so a job a consumer's claim took meanwhile is
/// left alone) and the chains its dead steps fail. Its jobs leave `running` whatever their
/// sends do (a failed send leaves a job in the outbox), so the next page finds others.
async fn page(tick: &Tick<'_>) -> worker::Result<Page> {
    let expired = job_list_expired(tick.db, tick.now_ms, tick.config.page).await?;
    let rows = expired.len();
    if rows == 0 {
        return Ok(Page {
            rows,
            all_sent: true,
            report: json!({ "requeued": 0, "sent": 0, "dead": 0 }),
        });
    }
    let decided: Vec<(&Expired, Decision)> = expired
        .iter()
        .map(|job| {
            let decision = after_lost_attempt(
                job.attempts,
                job.max_attempts,
                tick.now_ms,
                tick.queue_limit,
            );
            (job, decision)
        })
        .collect();
    let moves: Vec<LostMove> = decided
        .iter()
        .map(|(job, decision)| planned_move(job, decision, tick.now_ms))
        .collect();
    let failed_chains: Vec<DeadStepChain> = decided
        .iter()
        .filter(|(_, decision)| matches!(decision, Decision::Dead { .. }))
        .filter_map(|(job, _)| failed_chain(job))
        .collect();
    let statements = job_rescue_many(tick.db, tick.now_ms, &moves, &failed_chains)?;
    let results = tick.db.batch(statements.into()).await?;
    let rescued: Vec<Rescued> = results[1].results()?;
    let dead = JobStatus::Dead.as_str();
    rescued.iter().for_each(|r| log(r, tick.now_ms, dead));
    let (dead_jobs, requeued): (Vec<Rescued>, Vec<Rescued>) =
        rescued.into_iter().partition(|r| r.status == dead);
    let requeued: Vec<Unsent> = requeued.iter().map(Rescued::unsent).collect();
    let sent = job_sender::send(tick, &requeued).await?;
    dead_letter(tick.env, &dead_jobs).await;
    Ok(Page {
        rows,
        all_sent: true,
        report: json!({ "requeued": requeued.len(), "sent": sent, "dead": dead_jobs.len() }),
    })
}

/// The job's move as the rescue writes it.
fn planned_move<'a>(job: &'a Expired, decision: &'a Decision, now: i64) -> LostMove<'a> {
    let (status, run_at, finished_at, error) = match decision {
        Decision::Retry { error, delay_secs } => {
            let due = now + i64::from(*delay_secs) * 1000;
            (JobStatus::Queued, due, None, error)
        }
        Decision::Dead { error } => (JobStatus::Dead, now, Some(now), error),
        // A lost attempt is a failure, due again at once (`after_lost_attempt`): never held.
        Decision::RetryLater { .. } | Decision::Succeed | Decision::Skip { .. } => {
            unreachable!("a lost attempt is a failure due at once")
        }
    };
    LostMove {
        id: &job.id,
        run: job.runs,
        status,
        run_at,
        finished_at,
        last_error: &error.message,
    }
}

/// The chain a dead step fails, if the step is in one.
fn failed_chain(job: &Expired) -> Option<DeadStepChain<'_>> {
    let (parent_id, message) =
        failed_chain_of_dead_step(&job.id, &job.job_type, &job.chain(), LOST_ATTEMPT)?;
    Some(DeadStepChain {
        parent_id,
        message,
        step_id: &job.id,
    })
}

/// Dead jobs go to their family's DLQ as the consumer's do, so D1 and the DLQ agree.
async fn dead_letter(env: &Env, jobs: &[Rescued]) {
    let outgoing: Vec<_> = jobs
        .iter()
        .filter_map(|r| Outgoing::stored(r.unsent().stored(), 0))
        .collect();
    send_to(env, &outgoing, Destination::DeadLetters).await;
}

/// `job.interrupted` for the lost attempt, then `job.exhausted` if it was the last.
fn log(r: &Rescued, now_ms: i64, dead: &str) {
    let job = JobRef {
        id: &r.id,
        job_type: &r.job_type,
        queue: &r.family,
        attempt: r.attempts,
        correlation_id: r.correlation_id.as_deref().unwrap_or(&r.id),
    };
    let error = JobError::new(ErrorClass::LeaseExpired, LOST_ATTEMPT);
    let duration = r.started_at.map(|at| now_ms - at);
    emit(&job_event(
        JobEventKind::Interrupted,
        &job,
        duration,
        Some(&error),
        &[],
    ));
    let next = if r.status == dead {
        JobEventKind::Exhausted
    } else {
        JobEventKind::RetryScheduled
    };
    emit(&job_event(next, &job, None, Some(&error), &[]));
}
