//! One queue batch, start to end: claim every job in one D1 round trip (two when a message
//! claims nothing at first, see `jobs::job_claim`), run the handlers
//! concurrently, record every outcome (and read why the other messages claimed nothing) in a
//! second round trip, then ack, retry or dead-letter each message. Every message leaves with an
//! explicit ack or retry. What it tells the outside (log lines, Analytics Engine) goes through
//! crate::job_events. Each stage's future is boxed where it is awaited (`boxed_local`), so that
//! its code is a function of its own rather than part of one batch-wide state machine: V8
//! compiles a hot WASM function whole, and a stage that did not run (dead letters, the one-by-one
//! record) then costs nothing (README "Benchmark").

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use futures::future::{select, Either};
use futures::stream::{self, StreamExt};
use futures::FutureExt;
use jobs_shared::job::lease::{self, ConsumerLimits};
use jobs_shared::job::stored_result::stored_result;
use jobs_shared::observe::job_event::Settled;
use jobs_shared::observe::job_minutes::{self, Ended};
use jobs_shared::observe::log_line::{fault, LogLevel};
use jobs_shared::{
    decide, D1Stats, Decision, ErrorClass, Family, JobError, JobMessage, JobRetry, JobStatus,
    JobType, Ran, RetryPolicy, RunDetails,
};
use jobs_store::jobs::{
    self, ClaimTerms, Claimed, Exhausted, FailedChain, Finished, Leftovers, PastExpiry, Seen,
};
use serde_json::Value;
use worker::js_sys::Math;
use worker::{D1Database, Delay, Env};

use crate::delivery::Delivery;
use crate::invocation::Invocation;
use crate::job_context::{HandlerRun, JobContext, Release};
use crate::job_events::{self, Recorded};
use crate::outbound::BatchGate;
use crate::{chain, dead_letters, handlers, now_ms};

/// How far past its deadline a job may run before the batch ends it.
const DEADLINE_SLACK_MS: i64 = 1_000;

/// A claimed job the invocation had no wall time or subrequests left to start: back in 1 s.
const NOT_STARTED: Release = Release {
    retry_secs: 1,
    reason: "released",
};

pub async fn run(queue: &str, deliveries: &[Delivery], env: &Env, invocation: &Invocation) {
    let Some((family, is_dlq)) = Family::from_queue_name(queue) else {
        fault(
            LogLevel::Error,
            "batch",
            format_args!("batch from unknown queue {queue}: retried later"),
        );
        deliveries.iter().for_each(|d| d.retry(300));
        return;
    };
    if is_dlq {
        return dead_letters::record(family, deliveries, env)
            .boxed_local()
            .await;
    }
    for delivery in deliveries {
        if let Err(e) = &delivery.message {
            fault(
                LogLevel::Error,
                "batch",
                format_args!("dropping a message on {queue} that is not a job: {e}"),
            );
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
    let jobs = run_jobs(&db, family, &valid, env, invocation, &mut stats).boxed_local();
    let settled = match jobs.await {
        Ok(settled) => settled,
        Err(e) => {
            d1_failed(&valid, &e);
            Settled::default()
        }
    };
    let duration_ms = now_ms() - started;
    let work = (&stats, &settled);
    job_events::batch_completed(queue, valid.len(), work, duration_ms, &invocation.id);
}

async fn run_jobs(
    db: &D1Database,
    family: Family,
    valid: &[&Delivery],
    env: &Env,
    invocation: &Invocation,
    stats: &mut D1Stats,
) -> worker::Result<Settled> {
    let (limits, warnings) = ConsumerLimits::from_vars(|name| crate::config(env, name));
    warnings
        .iter()
        .for_each(|w| fault(LogLevel::Error, "config", w));
    let ids: Vec<&str> = valid.iter().filter_map(|d| d.job_id()).collect();
    let types = valid
        .iter()
        .filter_map(|d| JobType::parse(&d.message.as_ref().ok()?.job_type));
    let lease = lease::lease_ms(family, types);
    let batch_started = now_ms();
    let terms = ClaimTerms {
        family,
        now_ms: batch_started,
        lease_until: batch_started + lease,
        found_by: &invocation.found_by(),
    };
    let claim = jobs::job_claim(db, &ids, &terms, stats)
        .boxed_local()
        .await?;

    let mut claimed: HashMap<&str, &Claimed> =
        claim.claimed.iter().map(|c| (c.id.as_str(), c)).collect();
    let held: HashSet<&str> = claim.held.iter().map(|h| h.id.as_str()).collect();
    let exhausted: HashMap<&str, &Exhausted> =
        claim.exhausted.iter().map(|e| (e.id.as_str(), e)).collect();
    let expired: HashMap<&str, &PastExpiry> = claim
        .expired
        .iter()
        .map(|e| (e.job.id.as_str(), e))
        .collect();
    let mut runs: Vec<Run> = Vec::new();
    let mut started: HashSet<&str> = HashSet::new();
    let mut unclaimed: Vec<&Delivery> = Vec::new();
    let mut dead = Vec::new();
    for delivery in valid {
        let id = delivery.job_id().unwrap_or_default();
        match claimed.remove(id) {
            Some(job) => {
                started.insert(id);
                runs.push(Run::new(delivery, job))
            }
            // Paused: held in D1 without spending an attempt; the resume re-sends it.
            None if held.contains(id) => {
                job_events::skipped(delivery, family, "paused", None);
                delivery.ack()
            }
            // Its last attempt was lost with its lease: dead now, and dead-lettered.
            None if exhausted.contains_key(id) => {
                let job = exhausted[id];
                job_events::exhausted_on_claim(family, job);
                let cid = job.correlation_id.as_deref();
                dead.push((*delivery, JobMessage::stored(&job.id, &job.job_type, cid)));
            }
            // Past its expires_at: skipped, never run.
            None if expired.contains_key(id) => {
                job_events::expired_on_claim(family, expired[id]);
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
    let failed_chains: Vec<FailedChain> = claim
        .exhausted
        .iter()
        .filter_map(|job| chain::failed_by_lost_attempt(job, batch_started))
        .chain(
            (claim.expired.iter()).filter_map(|e| chain::failed_by_expiry(&e.job, batch_started)),
        )
        .collect();

    let gate = BatchGate::new(&limits);
    let (attempts, heartbeat) =
        execute_all(db, &runs, env, invocation, &gate, (&limits, &terms, lease))
            .boxed_local()
            .await;
    stats.merge(&heartbeat.stats);
    for (run, ran) in runs.iter_mut().zip(attempts) {
        match ran {
            Ok(mut attempt) => {
                attempt.details.lease_until = heartbeat.lease_until;
                run.finish(attempt)
            }
            Err(release) => run.release = Some(release),
        }
    }
    let (ran, released): (Vec<&Run>, Vec<&Run>) = runs.iter().partition(|r| r.attempt.is_some());
    let released: Vec<&Claimed> = released.iter().map(|r| r.job).collect();
    let finished: Vec<Finished> = ran.iter().filter_map(|r| r.finished()).collect();
    let ended = finished.iter().map(|f| Ended {
        finished_at: f.finished_at,
        duration_ms: f.finished_at - f.started_at,
        decision: f.decision,
        wait_ms: (f.job.runs == 1).then(|| f.started_at - f.job.created_at),
    });
    let minutes = job_minutes::tally(family, ended);
    let settled = (minutes.iter()).fold(Settled::default(), |all, m| all.merged(&m.settled));
    let leftovers = Leftovers {
        released: &released,
        failed_chains: &failed_chains,
        unclaimed: &unclaimed_ids,
        minutes: &minutes,
    };
    let seen = match jobs::job_set_outcome_many(db, family, &finished, &leftovers, stats).await {
        Ok(seen) => seen,
        Err(e) => {
            let message = format_args!(
                "recording {} outcome(s) together failed, one by one now: {e}",
                finished.len()
            );
            fault(LogLevel::Error, "batch", message);
            match record_one_by_one(db, family, &mut runs, &leftovers, stats)
                .boxed_local()
                .await
            {
                Ok(seen) => seen,
                Err(e) => {
                    // The jobs stay `running` under their lease; their messages come back once it ends.
                    fault(
                        LogLevel::Error,
                        "batch",
                        format_args!("recording outcomes failed: {e}"),
                    );
                    runs.iter()
                        .for_each(|r| r.delivery.retry((lease / 1000) as u64));
                    d1_failed(&unclaimed, &e);
                    dead_letters::send(family, &dead, env).boxed_local().await;
                    return Ok(Settled::default());
                }
            }
        }
    };
    let seen: HashMap<&str, &Seen> = seen.iter().map(|s| (s.id.as_str(), s)).collect();
    let now = now_ms();
    for delivery in unclaimed {
        let id = delivery.job_id().unwrap_or_default();
        settle_unclaimed(delivery, family, seen.get(id).copied(), now);
    }

    let recorded: Vec<Recorded> = runs.iter().filter_map(Run::recorded).collect();
    job_events::recorded(family, &recorded, env);
    for run in &runs {
        match &run.decision {
            // Released unstarted: it comes back, with no attempt spent.
            None => {
                let Release { retry_secs, reason } = run.release.unwrap_or(NOT_STARTED);
                job_events::skipped(run.delivery, family, reason, Some(retry_secs));
                run.delivery.retry(retry_secs)
            }
            Some(Decision::Succeed | Decision::Hold { .. } | Decision::Skip { .. }) => {
                run.delivery.ack()
            }
            Some(Decision::Retry { delay_secs, .. }) => run.delivery.retry((*delay_secs).into()),
            Some(Decision::Dead { .. }) => dead.push((
                run.delivery,
                JobMessage::stored(&run.job.id, &run.job.job_type, Some(run.job.correlation())),
            )),
        }
    }
    // A chain's next step inherits the step's correlation id.
    let next_steps: Vec<_> = runs
        .iter()
        .filter_map(|r| Some((r.chain.as_ref()?.next.as_ref()?, r.job.correlation())))
        .collect();
    futures::join!(
        dead_letters::send(family, &dead, env).boxed_local(),
        chain::send(env, &next_steps).boxed_local()
    );
    Ok(settled)
}

/// One claimed job through the batch: claimed, run (or released unstarted), decided, chained.
struct Run<'a> {
    delivery: &'a Delivery,
    job: &'a Claimed,
    /// `None` until run, and for a job released unstarted.
    attempt: Option<Attempt>,
    /// Why and for how long a job was released unstarted.
    release: Option<Release>,
    decision: Option<Decision>,
    chain: Option<chain::Planned>,
}

impl<'a> Run<'a> {
    fn new(delivery: &'a Delivery, job: &'a Claimed) -> Run<'a> {
        Run {
            delivery,
            job,
            attempt: None,
            release: None,
            decision: None,
            chain: None,
        }
    }

    /// Decides what follows the attempt and plans the chain's move.
    fn finish(&mut self, mut attempt: Attempt) {
        let outcome = attempt.outcome.as_ref().map(|_| ()).map_err(Clone::clone);
        self.set_decision(
            decide(
                &outcome,
                self.job.attempts,
                self.job.max_attempts,
                &attempt.policy,
                Math::random(),
                attempt.finished_at,
                self.delivery.queue_limit,
            ),
            std::mem::take(&mut attempt.follow_ups),
            attempt.finished_at,
        );
        self.attempt = Some(attempt);
    }

    fn set_decision(&mut self, decision: Decision, follow_ups: Vec<Value>, at: i64) {
        let limit = self.delivery.queue_limit;
        self.chain = Some(chain::plan(self.job, &decision, follow_ups, at, limit));
        self.decision = Some(decision);
    }

    /// What the record writes for this run; `None` for a job released unstarted.
    fn finished(&self) -> Option<Finished<'_>> {
        let attempt = self.attempt.as_ref()?;
        Some(Finished {
            job: self.job,
            started_at: attempt.started_at,
            finished_at: attempt.finished_at,
            decision: self.decision.as_ref()?,
            result: attempt
                .outcome
                .as_ref()
                .ok()
                .and_then(|r| r.as_ref())
                .map(stored_result),
            cost_cents: attempt.cost_cents,
            details: &attempt.details,
            chain: self.chain.as_ref()?.write(),
        })
    }

    fn recorded(&self) -> Option<Recorded<'_>> {
        let attempt = self.attempt.as_ref()?;
        Some(Recorded {
            job: self.job,
            decision: self.decision.as_ref()?,
            duration_ms: attempt.finished_at - attempt.started_at,
            cost_cents: attempt.cost_cents,
            delivery_attempts: self.delivery.delivery_attempts,
        })
    }
}

/// Writes each run's record in a round trip of its own, after the batch's single record was
/// refused: a row D1 rejects then fails its own job (retried as an internal error) and no
/// other. Only on that failure path: the happy path stays at one round trip.
async fn record_one_by_one(
    db: &D1Database,
    family: Family,
    runs: &mut [Run<'_>],
    leftovers: &Leftovers<'_>,
    stats: &mut D1Stats,
) -> worker::Result<Vec<Seen>> {
    let seen = jobs::job_set_outcome_many(db, family, &[], leftovers, stats).await?;
    for run in runs.iter_mut() {
        let Some(one) = run.finished() else {
            continue;
        };
        let Err(e) =
            jobs::job_set_outcome_many(db, family, &[one], &Leftovers::default(), stats).await
        else {
            continue;
        };
        let Some(attempt) = run.attempt.as_mut() else {
            continue;
        };
        let error = JobError::new(
            ErrorClass::Internal,
            format!("the attempt's outcome could not be recorded: {e}"),
        );
        attempt.outcome = Err(error.clone());
        let (policy, finished_at) = (attempt.policy, attempt.finished_at);
        let decision = decide(
            &Err(error),
            run.job.attempts,
            run.job.max_attempts,
            &policy,
            Math::random(),
            finished_at,
            run.delivery.queue_limit,
        );
        run.set_decision(decision, Vec::new(), finished_at);
        let Some(failed) = run.finished() else {
            continue;
        };
        // Even the failure cannot be written: D1 itself is failing, leave it to the lease.
        jobs::job_set_outcome_many(db, family, &[failed], &Leftovers::default(), stats).await?;
    }
    Ok(seen)
}

/// What the batch's heartbeat did: its D1 work, and the lease its jobs hold as D1 last
/// confirmed it (the claim's, or the latest heartbeat's), `None` after a heartbeat D1 refused.
struct Heartbeat {
    stats: D1Stats,
    lease_until: Option<i64>,
}

/// Runs every claimed job, at most `limits.connections` at once, each within its deadline,
/// while a heartbeat extends the leases of every job the batch holds (waiting, running, or run
/// and not yet recorded) until the record. A job that could no longer end inside the
/// invocation's wall time, or that would call out when the invocation's subrequests are spent,
/// is not started, and a handler may hand its job back unstarted (`Err`): its claim is undone.
async fn execute_all(
    db: &D1Database,
    runs: &[Run<'_>],
    env: &Env,
    invocation: &Invocation,
    gate: &BatchGate,
    (limits, terms, lease): (&ConsumerLimits, &ClaimTerms<'_>, i64),
) -> (Vec<Result<Attempt, Release>>, Heartbeat) {
    let batch_started = terms.now_ms;
    let work = stream::iter(runs)
        .map(|run| async move {
            let job = run.job;
            let job_type = JobType::parse(&job.job_type);
            let deadline = job_type.map_or(0, |t| lease::deadline_ms(t, payload_timeout(job, t)));
            let calls_out = job_type.is_some_and(|t| t.handler().calls_out());
            if !limits.may_start(batch_started, now_ms(), deadline)
                || (calls_out && !gate.has_subrequests_left())
            {
                return Err(NOT_STARTED);
            }
            execute(job, job_type, (env, invocation), gate, deadline).await
        })
        .buffered(limits.connections)
        .collect::<Vec<_>>();
    let held: Vec<(&str, u32)> = runs
        .iter()
        .map(|r| (r.job.id.as_str(), r.job.runs))
        .collect();
    let mut beat = Heartbeat {
        stats: D1Stats::default(),
        lease_until: Some(terms.lease_until),
    };
    let heartbeat = async {
        let every = limits.heartbeat_every_ms(lease).max(1) as u64;
        loop {
            Delay::from(Duration::from_millis(every)).await;
            let until = now_ms() + lease;
            let extended = jobs::job_extend_leases(db, &held, until, &mut beat.stats).await;
            beat.lease_until = extended.as_ref().ok().map(|()| until);
            if let Err(e) = extended {
                let message = format_args!(
                    "extending {} lease(s) failed, tried again in {every} ms: {e}",
                    held.len()
                );
                fault(LogLevel::Error, "heartbeat", message);
            }
        }
    };
    let attempts = match select(work.boxed_local(), heartbeat.boxed_local()).await {
        Either::Left((attempts, _)) => attempts,
        Either::Right((never, _)) => never,
    };
    (attempts, beat)
}

/// A job's own `timeout_ms`, for a type whose payload may set it (see `lease::deadline_ms`).
fn payload_timeout(job: &Claimed, job_type: JobType) -> Option<u32> {
    #[derive(serde::Deserialize)]
    struct OwnTimeout {
        timeout_ms: Option<u32>,
    }
    let allowed = job_type.spec().payload_timeout;
    allowed
        .then(|| {
            serde_json::from_str::<OwnTimeout>(&job.payload)
                .ok()?
                .timeout_ms
        })
        .flatten()
}

/// One handler run, timed.
struct Attempt {
    started_at: i64,
    finished_at: i64,
    outcome: Result<Option<Value>, JobError>,
    /// What the attempt spent (see job_context::HandlerRun).
    cost_cents: f64,
    /// Checked follow-up jobs the handler returned (see crate::chain).
    follow_ups: Vec<Value>,
    /// The job's own retry policy, else its type's (the default one for a type this build
    /// does not know).
    policy: RetryPolicy,
    /// What ran it and what it produced, for its run record.
    details: RunDetails,
}

/// Runs one job within its deadline (a little over it, so a handler's own timeout, with its
/// more precise message, ends it first). Its requests must end WRITE_RESERVE_MS before the
/// deadline, leaving the handler time to write what they returned. `Err`: the handler released
/// the job unstarted.
async fn execute(
    job: &Claimed,
    job_type: Option<JobType>,
    (env, invocation): (&Env, &Invocation),
    gate: &BatchGate,
    deadline_ms: i64,
) -> Result<Attempt, Release> {
    let started_at = now_ms();
    let outbound = gate.for_job(started_at + deadline_ms - lease::WRITE_RESERVE_MS);
    let ran = match job_type {
        Some(job_type) => {
            let ctx = JobContext {
                job,
                job_type,
                env,
                outbound: &outbound,
                started_at,
            };
            let run = handlers::run(&ctx);
            let limit = deadline_ms + DEADLINE_SLACK_MS;
            crate::deadline::within(limit as u64, run)
                .await
                .unwrap_or_else(|| {
                    HandlerRun::of(Err(JobError::new(
                        ErrorClass::Timeout,
                        format!("the job ran past its deadline of {deadline_ms} ms"),
                    )))
                })
        }
        None => HandlerRun::of(Err(JobError::new(
            ErrorClass::InvalidPayload,
            format!("unknown job type {}", job.job_type),
        ))),
    };
    if let Some(release) = ran.release {
        return Err(release);
    }
    let finished_at = now_ms();
    let (outcome, follow_ups) = if ran.follow_ups_trusted {
        chain::take_follow_ups(ran.outcome, finished_at)
    } else {
        (ran.outcome, Vec::new())
    };
    let details = RunDetails {
        version: invocation.version.clone(),
        invocation: invocation.id.clone(),
        ran: Ran {
            handler: job_type.map_or("unknown", |t| t.handler().module()),
            bytes: outbound.bytes(),
            llm: ran.llm,
            artifacts: ran.artifacts,
        },
        lease_until: None, // the batch's, once every job has run
    };
    Ok(Attempt {
        started_at,
        finished_at,
        outcome,
        cost_cents: ran.cost_cents,
        follow_ups,
        policy: (job.retry_policy.as_deref())
            .and_then(JobRetry::from_stored)
            .unwrap_or_else(|| job_type.map_or(RetryPolicy::DEFAULT, |t| t.spec().retry)),
        details,
    })
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

/// D1 itself failed: each message comes back after a delay that grows with its deliveries
/// (shared `d1_retry_secs`), so an outage of many hours spends few of the queue's retries.
fn d1_failed(deliveries: &[&Delivery], e: &dyn std::fmt::Display) {
    let message = format_args!(
        "D1 unavailable, {} message(s) retried with backoff: {e}",
        deliveries.len()
    );
    fault(LogLevel::Error, "batch", message);
    for delivery in deliveries {
        delivery.retry(jobs_shared::d1_retry_secs(delivery.delivery_attempts));
    }
}
