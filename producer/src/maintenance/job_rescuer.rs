//! Lease rescue: a `running` job whose lease ran out lost its worker. The lost attempt gets
//! its run record (`lease_expired`), and what follows is decided by the same `decide()` as
//! every failed attempt (`after_lost_attempt`): back to its queue at once, or `dead` if that was
//! its last attempt, failing the chain it is a step of. The lease is the one the consumer
//! claimed with (`lease.rs`). A late outcome from a worker that was only slow is refused by the
//! consumer's (status, run) guard. Each rescue is logged as `job.interrupted` (and
//! `job.exhausted` when the job is dead), in the consumer's log schema. A backlog of expired
//! leases is worked through in pages within the tick (`paging.rs`).

use jobs_shared::job::lease::{after_lost_attempt, record_lost_attempts_sql, LOST_ATTEMPT};
use jobs_shared::observe::job_event::{job_event, JobEventKind, JobRef};
use jobs_shared::util::queue_send::{send_to, Outgoing};
use jobs_shared::{
    after_death, ChainMove, ChainPosition, Decision, ErrorClass, Family, JobError, JobStatus,
};
use serde::Deserialize;
use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use worker::{console_error, console_warn, Env};

use super::job_sender;
use super::paging::{self, Page};
use super::Tick;
use crate::dispatch::{Unsent, UNSENT_COLUMNS};
use crate::job_store::num;

/// A running job whose lease ran out, as the page reads it.
#[derive(Deserialize)]
struct Expired {
    id: String,
    #[serde(rename = "type")]
    job_type: String,
    attempts: u32,
    max_attempts: u32,
    runs: u32,
    parent_id: Option<String>,
    chain_step: Option<u32>,
    chain_status: Option<String>,
}

#[derive(Deserialize)]
struct Rescued {
    #[serde(flatten)]
    job: Unsent,
    status: String,
    attempts: u32,
    started_at: Option<i64>,
}

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    paging::pages(tick, || page(tick)).await
}

/// One page: the expired leases it reads are each decided by `after_lost_attempt` (the same
/// `decide()` as every failed attempt), then written in one batch: the lost attempts' run
/// records, each job's move (guarded by its run, so a job a consumer's claim took meanwhile is
/// left alone) and the chains its dead steps fail. Its jobs leave `running` whatever their
/// sends do (a failed send leaves a job in the outbox), so the next page finds others.
async fn page(tick: &Tick<'_>) -> worker::Result<Page> {
    let running = JobStatus::Running.as_str();
    let expired: Vec<Expired> = tick
        .db
        .prepare(format!(
            "SELECT id, type, attempts, max_attempts, runs, parent_id, chain_step, chain_status \
             FROM jobs WHERE status = '{running}' AND lease_until < ?1 ORDER BY lease_until LIMIT ?2"
        ))
        .bind(&[num(tick.now_ms), num(tick.config.page.into())])?
        .all()
        .await?
        .results()?;
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
    let moves: Vec<Value> = decided
        .iter()
        .map(|(job, decision)| planned_move(job, decision, tick.now_ms))
        .collect();
    let failed_chains: Vec<Value> = decided
        .iter()
        .filter(|(_, decision)| matches!(decision, Decision::Dead { .. }))
        .filter_map(|(job, _)| failed_chain(job))
        .collect();
    let moves = JsValue::from_str(&Value::Array(moves).to_string());
    let lost = format!(
        "id IN (SELECT o.value ->> 0 FROM json_each(?2) o WHERE o.value ->> 1 = jobs.runs) \
         AND status = '{running}' AND lease_until < ?1"
    );
    let record_run = tick
        .db
        .prepare(record_lost_attempts_sql("?1", &lost))
        .bind(&[num(tick.now_ms), moves.clone()])?;
    let release = tick
        .db
        .prepare(format!(
            "UPDATE jobs SET status = o.value ->> 2, run_at = o.value ->> 3, \
             finished_at = o.value ->> 4, last_error = o.value ->> 5, lease_until = NULL, \
             sent_at = NULL, error_class = 'lease_expired', updated_at = ?1, escalated_at = NULL \
             FROM json_each(?2) o WHERE jobs.id = o.value ->> 0 AND jobs.runs = o.value ->> 1 \
             AND +jobs.status = '{running}' AND jobs.lease_until < ?1 \
             RETURNING {UNSENT_COLUMNS}, status, attempts, started_at"
        ))
        .bind(&[num(tick.now_ms), moves])?;
    // After the release, which only moves steps that were still this run's.
    let fail_chains = tick
        .db
        .prepare(
            "UPDATE jobs SET chain_status = 'failed', chain_error = o.value ->> 1, \
             updated_at = ?1 FROM json_each(?2) o \
             WHERE jobs.id = o.value ->> 0 AND jobs.chain_status = 'running' \
             AND EXISTS (SELECT 1 FROM jobs s WHERE s.id = o.value ->> 2 AND s.status = 'dead')",
        )
        .bind(&[
            num(tick.now_ms),
            JsValue::from_str(&Value::Array(failed_chains).to_string()),
        ])?;
    let results = tick
        .db
        .batch(vec![record_run, release, fail_chains])
        .await?;
    let rescued: Vec<Rescued> = results[1].results()?;
    let dead = JobStatus::Dead.as_str();
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

/// The job's move as the release statement reads it: `[id, run, status, run_at, finished_at,
/// last_error]`.
fn planned_move(job: &Expired, decision: &Decision, now: i64) -> Value {
    let (status, run_at, finished_at, error) = match decision {
        Decision::Retry { error, delay_secs } => {
            let due = now + i64::from(*delay_secs) * 1000;
            (JobStatus::Queued, due, None, error)
        }
        Decision::Hold { error, until_ms } => (JobStatus::Scheduled, *until_ms, None, error),
        Decision::Dead { error } => (JobStatus::Dead, now, Some(now), error),
        Decision::Succeed => unreachable!("a lost attempt is a failure"),
    };
    json!([
        job.id,
        job.runs,
        status.as_str(),
        run_at,
        finished_at,
        error.message
    ])
}

/// The chain a dead step fails: `[parent_id, message, step_id]`, if the step is in one.
fn failed_chain(job: &Expired) -> Option<Value> {
    let at = ChainPosition {
        job_id: &job.id,
        parent_id: job.parent_id.as_deref(),
        step: job.chain_step.unwrap_or(0),
        next_steps: None,
        chain_status: job.chain_status.as_deref(),
    };
    match after_death(&at, &job.job_type, LOST_ATTEMPT) {
        ChainMove::Failed { parent_id, message } => Some(json!([parent_id, message, job.id])),
        _ => None,
    }
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
