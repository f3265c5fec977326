//! One queue batch, start to end: claim every job in one D1 round trip, run the handlers
//! concurrently, record every outcome (and read why the other messages claimed nothing) in a
//! second round trip, then ack, retry or dead-letter each message. Every message leaves with an
//! explicit ack or retry. What it tells the outside (log lines, Analytics Engine) goes through
//! crate::job_events.

use std::collections::{HashMap, HashSet};

use futures::future::join_all;
use jobs_shared::{
    decide, D1Stats, Decision, ErrorClass, Family, JobError, JobMessage, JobStatus, JobType,
    RetryPolicy,
};
use serde_json::Value;
use worker::js_sys::Math;
use worker::{console_error, D1Database, Env};

use crate::claim_store::{self, Claimed, Finished, Seen};
use crate::delivery::Delivery;
use crate::job_events::{self, Recorded};
use crate::{chain, dead_letters, handlers, now_ms};

/// When D1 itself fails, the whole batch comes back after this long.
const D1_RETRY_SECS: u64 = 10;

pub async fn run(queue: &str, deliveries: Vec<Delivery>, env: &Env) {
    let Some((family, is_dlq)) = Family::from_queue_name(queue) else {
        console_error!("batch from unknown queue {queue}: retried later");
        deliveries.iter().for_each(|d| d.retry(300));
        return;
    };
    if is_dlq {
        return dead_letters::record(family, &deliveries, env).await;
    }
    for delivery in &deliveries {
        if let Err(e) = &delivery.message {
            console_error!("dropping a message on {queue} that is not a job: {e}");
            delivery.ack();
        }
    }
    let valid: Vec<&Delivery> = deliveries.iter().filter(|d| d.message.is_ok()).collect();
    if valid.is_empty() {
        return;
    }
    let db = match env.d1("DB") {
        Ok(db) => db,
        Err(e) => return d1_failed(&valid, &e),
    };
    let started = now_ms();
    let mut stats = D1Stats::default();
    if let Err(e) = run_jobs(&db, family, &valid, env, &mut stats).await {
        d1_failed(&valid, &e);
    }
    job_events::batch_completed(queue, valid.len(), &stats, now_ms() - started);
}

async fn run_jobs(
    db: &D1Database,
    family: Family,
    valid: &[&Delivery],
    env: &Env,
    stats: &mut D1Stats,
) -> worker::Result<()> {
    let ids: Vec<&str> = valid.iter().filter_map(|d| d.job_id()).collect();
    let now = now_ms();
    let claim = claim_store::claim(db, family, &ids, now, now + family.lease_ms(), stats).await?;

    let mut claimed: HashMap<&str, &Claimed> =
        claim.claimed.iter().map(|c| (c.id.as_str(), c)).collect();
    let held: HashSet<&str> = claim.held.iter().map(|h| h.id.as_str()).collect();
    let mut runs: Vec<(&Delivery, &Claimed)> = Vec::new();
    let mut started: HashSet<&str> = HashSet::new();
    let mut unclaimed: Vec<&Delivery> = Vec::new();
    for delivery in valid {
        let id = delivery.job_id().unwrap_or_default();
        match claimed.remove(id) {
            Some(job) => {
                started.insert(id);
                runs.push((delivery, job))
            }
            // Paused: held in D1 without spending an attempt; the resume re-sends it.
            None if held.contains(id) => {
                job_events::skipped(delivery, family, "paused", None);
                delivery.ack()
            }
            // A second message for a job an earlier message of this batch claimed: nothing to
            // read.
            None if started.contains(id) => {
                job_events::skipped(delivery, family, "duplicate", None);
                delivery.ack()
            }
            None => unclaimed.push(delivery),
        }
    }
    let unclaimed_ids: Vec<&str> = unclaimed.iter().filter_map(|d| d.job_id()).collect();

    let mut attempts = join_all(runs.iter().map(|(_, job)| execute(job, env))).await;
    let decisions: Vec<Decision> = runs
        .iter()
        .zip(&attempts)
        .map(|((delivery, job), attempt)| {
            let outcome = attempt.outcome.as_ref().map(|_| ()).map_err(Clone::clone);
            decide(
                &outcome,
                job.attempts,
                job.max_attempts,
                &attempt.policy,
                Math::random(),
                attempt.finished_at,
                delivery.queue_limit,
            )
        })
        .collect();
    let plans: Vec<chain::Planned> = runs
        .iter()
        .zip(attempts.iter_mut())
        .zip(&decisions)
        .map(|(((delivery, job), attempt), decision)| {
            let follow_ups = std::mem::take(&mut attempt.follow_ups);
            let limit = delivery.queue_limit;
            chain::plan(job, decision, follow_ups, attempt.finished_at, limit)
        })
        .collect();
    let finished: Vec<Finished> = runs
        .iter()
        .zip(&attempts)
        .zip(&decisions)
        .zip(&plans)
        .map(|((((_, job), attempt), decision), chain)| Finished {
            job,
            started_at: attempt.started_at,
            finished_at: attempt.finished_at,
            decision,
            result: attempt
                .outcome
                .as_ref()
                .ok()
                .and_then(|r| r.as_ref())
                .map(Value::to_string),
            cost_cents: attempt.cost_cents,
            chain,
        })
        .collect();
    let seen = match claim_store::finish(db, &finished, &unclaimed_ids, stats).await {
        Ok(seen) => seen,
        Err(e) => {
            // The jobs stay `running` under their lease; their messages come back once it ends.
            console_error!("recording {} outcome(s) failed: {e}", finished.len());
            runs.iter()
                .for_each(|(d, _)| d.retry(family.lease_secs().into()));
            d1_failed(&unclaimed, &e);
            return Ok(());
        }
    };
    let seen: HashMap<&str, &Seen> = seen.iter().map(|s| (s.id.as_str(), s)).collect();
    let now = now_ms();
    for delivery in unclaimed {
        let id = delivery.job_id().unwrap_or_default();
        settle_unclaimed(delivery, family, seen.get(id).copied(), now);
    }
    if runs.is_empty() {
        return Ok(());
    }

    let recorded: Vec<Recorded> = finished
        .iter()
        .zip(&runs)
        .map(|(f, (delivery, _))| Recorded {
            job: f.job,
            decision: f.decision,
            duration_ms: f.finished_at - f.started_at,
            cost_cents: f.cost_cents,
            delivery_attempts: delivery.delivery_attempts,
        })
        .collect();
    job_events::recorded(family, &recorded, env);
    let mut dead = Vec::new();
    for ((delivery, job), decision) in runs.iter().zip(&decisions) {
        match decision {
            Decision::Succeed | Decision::Hold { .. } => delivery.ack(),
            Decision::Retry { delay_secs, .. } => delivery.retry((*delay_secs).into()),
            Decision::Dead { .. } => dead.push((
                *delivery,
                JobMessage::stored(&job.id, &job.job_type, Some(job.correlation())),
            )),
        }
    }
    // A chain's next step inherits the step's correlation id.
    let next_steps: Vec<_> = plans
        .iter()
        .zip(&runs)
        .filter_map(|(p, (_, job))| Some((p.next.as_ref()?, job.correlation())))
        .collect();
    futures::join!(
        dead_letters::send(family, &dead, env),
        chain::send(env, &next_steps)
    );
    Ok(())
}

/// One handler run, timed.
struct Attempt {
    started_at: i64,
    finished_at: i64,
    outcome: Result<Option<Value>, JobError>,
    /// What the attempt spent (see handlers::HandlerRun).
    cost_cents: f64,
    /// Checked follow-up jobs the handler returned (see crate::chain).
    follow_ups: Vec<Value>,
    /// The type's retry policy (seed 000's for a type this build does not know).
    policy: RetryPolicy,
}

async fn execute(job: &Claimed, env: &Env) -> Attempt {
    let started_at = now_ms();
    let job_type = JobType::parse(&job.job_type);
    let ran = match job_type {
        Some(job_type) => handlers::run(job, job_type, env, started_at).await,
        None => handlers::HandlerRun {
            outcome: Err(JobError::new(
                ErrorClass::InvalidPayload,
                format!("unknown job type {}", job.job_type),
            )),
            cost_cents: 0.0,
        },
    };
    let finished_at = now_ms();
    let (outcome, follow_ups) = chain::take_follow_ups(ran.outcome, finished_at);
    Attempt {
        started_at,
        finished_at,
        outcome,
        cost_cents: ran.cost_cents,
        follow_ups,
        policy: job_type.map_or(RetryPolicy::SEED_000, |t| t.spec().retry),
    }
}

/// A message whose job was not claimed: say why, and ack or retry it accordingly.
fn settle_unclaimed(delivery: &Delivery, family: Family, seen: Option<&Seen>, now: i64) {
    let ack = |reason: &str| {
        job_events::skipped(delivery, family, reason, None);
        delivery.ack()
    };
    let retry = |reason: &str, secs: u64| {
        job_events::skipped(delivery, family, reason, Some(secs));
        delivery.retry(secs)
    };
    let Some(seen) = seen else {
        return ack("not_found"); // deleted, or never written
    };
    if seen.family != family.as_str() {
        // Priority aging promoted the job and sent it to its new family's queue.
        return ack("superseded");
    }
    match JobStatus::parse(&seen.status) {
        // Another attempt holds the lease; if its worker died, this message takes over after.
        Some(JobStatus::Running) => retry(
            "lease_held",
            secs_until(seen.lease_until.unwrap_or(now), now),
        ),
        // Delivered early: wait until due. (Read after the handlers ran, so a job that was not
        // due at the claim may be due now: it comes back in a second and claims then.)
        Some(JobStatus::Queued | JobStatus::Retrying) => {
            retry("not_due", secs_until(seen.run_at, now))
        }
        Some(status) if status.is_terminal() => ack("finished"),
        // Held in D1: the sweep sends its message when it is due.
        _ => ack("scheduled"),
    }
}

fn secs_until(at_ms: i64, now: i64) -> u64 {
    ((at_ms - now).max(0) as u64).div_ceil(1000).max(1)
}

fn d1_failed(deliveries: &[&Delivery], e: &dyn std::fmt::Display) {
    console_error!("D1 unavailable, batch retried in {D1_RETRY_SECS} s: {e}");
    deliveries.iter().for_each(|d| d.retry(D1_RETRY_SECS));
}
