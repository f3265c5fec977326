//! Stage 3: every claimed job run, at most `limits.connections` at once, each within its
//! deadline, under the lease heartbeat. Each ends in a [`Fate`]: an [`Attempt`] decided, or
//! its job handed back unstarted (a `Release`) when the invocation could not see it end in its
//! wall time, had no subrequests left for it, or its handler could not start.

use futures::future::{join, join_all};
use futures::stream::{self, StreamExt};
use jobs_shared::job::flow_control::FlowTally;
use jobs_shared::job::job_type::JobType;
use jobs_shared::job::lease;
use jobs_shared::job::lifecycle::JobStatus;
use jobs_shared::job::run_details::{Ran, RunDetails};
use jobs_shared::observe::d1_stats::D1Stats;
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use jobs_shared::retry::retry_policy::RetryPolicy;
use jobs_shared::retry::retry_request::JobRetry;
use jobs_shared::runtime::clock::now_ms;
use jobs_store::job_types;
use jobs_store::jobs::{Claimed, RunKey};
use serde_json::Value;
use worker::js_sys::Math;

use super::context::BatchContext;
use super::fate::{Attempt, BatchJob, Decided, Fate};
use super::heartbeat::{self, Leases};
use crate::delivery::Delivery;
use crate::job_context::{HandlerRun, JobContext, Release};
use crate::outbound::BatchGate;
use crate::{chain, flow_gate, handlers};

/// How far past its deadline a job may run before the batch ends it.
const DEADLINE_SLACK_MS: i64 = 1_000;

/// A claimed job the invocation had no wall time or subrequests left to start: back in 1 s.
pub const NOT_STARTED: Release = Release {
    retry_secs: 1,
    reason: "released",
};

/// Runs the claimed `jobs` (with their messages) and decides what follows each; with what flow
/// control did per type and key.
pub async fn run_all<'a>(
    ctx: &BatchContext<'_>,
    jobs: &[(&'a Delivery, &'a Claimed)],
    stats: &mut D1Stats,
) -> (Vec<BatchJob<'a>>, Vec<FlowTally>) {
    let gate = BatchGate::new(ctx.limits);
    let claimed: Vec<&Claimed> = jobs.iter().map(|(_, job)| *job).collect();
    // Jobs of types with flow control wait for their key's slots apart (crate::flow_gate), so
    // a wait never holds up the others.
    let (plain, flowed) = flow_gate::group(&claimed);
    let (gate, claimed) = (&gate, &claimed);
    let work = async move {
        let plain = stream::iter(plain)
            .map(|i| async move { (i, start(ctx, gate, claimed[i]).await) })
            .buffered(ctx.limits.connections)
            .collect::<Vec<_>>();
        let run = |job| start(ctx, gate, job);
        let flowed = join_all(
            flowed
                .into_iter()
                .map(|group| flow_gate::run_group(ctx.env, group, run)),
        );
        let (plain, flowed) = join(plain, flowed).await;
        let (flowed, tallies): (Vec<_>, Vec<_>) = flowed.into_iter().unzip();
        // Each job's end in the batch's order; one that none came back for was not started.
        let mut ends: Vec<Option<Result<Attempt, Release>>> =
            claimed.iter().map(|_| None).collect();
        for (i, end) in plain.into_iter().chain(flowed.into_iter().flatten()) {
            ends[i] = Some(end);
        }
        let ends = ends.into_iter().map(|end| end.unwrap_or(Err(NOT_STARTED)));
        (ends.collect::<Vec<_>>(), tallies)
    };
    let held: Vec<RunKey> = (jobs.iter())
        .map(|(_, j)| RunKey {
            id: &j.id,
            run: j.runs,
        })
        .collect();
    let claim = ctx.terms.claim();
    let leases = Leases {
        held: &held,
        lease_until: claim.lease_until,
        lease_ms: ctx.terms.lease_ms,
    };
    let ((ends, tallies), beat) = heartbeat::during(ctx.db, &leases, ctx.limits, work).await;
    stats.merge(&beat.stats);
    let next_unknown = (ends.iter().zip(jobs))
        .any(|(end, (_, job))| end.as_ref().is_ok_and(|a| next_step_unknown(job, a)));
    if next_unknown {
        job_types::job_types_refresh(ctx.db, now_ms(), true).await;
    }
    let fates = ends.into_iter().zip(jobs).map(|(end, &(delivery, job))| {
        let fate = match end.and_then(|attempt| throttled(job, delivery, attempt)) {
            Ok(mut attempt) => {
                attempt.details.lease_until = beat.lease_until;
                let limit = delivery.queue_limit;
                Fate::Decided(Decided::of(job, attempt, Math::random(), limit))
            }
            Err(release) => Fate::Released(release),
        };
        BatchJob {
            delivery,
            job,
            fate,
        }
    });
    (fates.collect(), tallies)
}

/// Whether a success of `job` would enqueue a step (a follow-up its attempt returned, else its
/// chain's next) of a type this isolate lacks: a team's type it has not read, which the plan
/// would refuse as unknown (crate::chain). Reading the types again costs one query, and only
/// then.
fn next_step_unknown(job: &Claimed, attempt: &Attempt) -> bool {
    let carried = || {
        let steps = job.next_steps.as_deref()?;
        serde_json::from_str::<Vec<Value>>(steps)
            .ok()?
            .into_iter()
            .next()
    };
    let next = (attempt.outcome.is_ok())
        .then(|| attempt.follow_ups.first().cloned().or_else(carried))
        .flatten();
    next.is_some_and(|step| {
        step["type"]
            .as_str()
            .is_some_and(|t| JobType::parse(t).is_none())
    })
}

/// How often a job's message may come back throttled before a 429 counts as an attempt again:
/// the bound on "throttle, don't count" (docs/app-guide.md "Flow control").
pub const MAX_THROTTLED_DELIVERIES: u32 = 50;

/// A run its target answered 429, of a type whose flow control says a 429 throttles: handed
/// back unstarted (no attempt spent, no run record), its message due after the answer's
/// `Retry-After` (else the policy's first wait), until its message has come back
/// [`MAX_THROTTLED_DELIVERIES`] times.
fn throttled(job: &Claimed, delivery: &Delivery, attempt: Attempt) -> Result<Attempt, Release> {
    // The type is looked up only for a 429: every other end passes as it is.
    let throttles = || {
        JobType::parse(&job.job_type)
            .and_then(JobType::flow)
            .is_some_and(|flow| flow.throttle_on_429)
    };
    match &attempt.outcome {
        Err(e)
            if e.class == ErrorClass::RateLimited
                && delivery.delivery_attempts < MAX_THROTTLED_DELIVERIES
                && throttles() =>
        {
            let wait = e
                .retry_after_secs
                .unwrap_or_else(|| attempt.policy.delay_secs(1, 1.0));
            Err(Release {
                retry_secs: wait.max(1),
                reason: "throttled",
            })
        }
        _ => Ok(attempt),
    }
}

/// Starts `job` when the invocation can see it end within its wall time, and has subrequests
/// left should it call out; else hands it back unstarted.
async fn start(
    ctx: &BatchContext<'_>,
    gate: &BatchGate,
    job: &Claimed,
) -> Result<Attempt, Release> {
    let job_type = JobType::parse(&job.job_type);
    let deadline = job_type.map_or(0, |t| lease::deadline_ms(t, payload_timeout(job, t)));
    let calls_out = job_type.is_some_and(|t| t.handler().calls_out());
    let (started, now) = (ctx.terms.started_ms, now_ms());
    if !ctx.limits.may_start(started, now, deadline) || (calls_out && !gate.has_subrequests_left())
    {
        return Err(NOT_STARTED);
    }
    execute(ctx, gate, job, job_type, deadline).await
}

/// Why a group's branch is skipped, not run: its group no longer waits for it (docs/app-guide.md
/// "Workflows"). A group waits `scheduled` until it joins, so past that it has either joined
/// early, a branch failing it fast (its run ends it dead), or ended: cancelled with its chain.
/// A group that continues on failure joins only once no branch is left to start.
fn ended_group(job: &Claimed) -> Option<JobError> {
    let status = job.group_status.as_deref()?;
    if status == JobStatus::Scheduled.as_str() {
        return None;
    }
    let group = job.group_id.as_deref().unwrap_or_default();
    let message = format!("its group {group} no longer waits for it ({status}): skipped, not run");
    Some(JobError::new(ErrorClass::GroupEnded, message))
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

/// Runs one job within its deadline (a little over it, so a handler's own timeout, with its
/// more precise message, ends it first). Its requests must end WRITE_RESERVE_MS before the
/// deadline, leaving the handler time to write what they returned. `Err`: the handler released
/// the job unstarted.
async fn execute(
    ctx: &BatchContext<'_>,
    gate: &BatchGate,
    job: &Claimed,
    job_type: Option<JobType>,
    deadline_ms: i64,
) -> Result<Attempt, Release> {
    let started_at = now_ms();
    let outbound = gate.for_job(started_at + deadline_ms - lease::WRITE_RESERVE_MS);
    let ran = match (ended_group(job), job_type) {
        (Some(ended), _) => HandlerRun::of(Err(ended)),
        (None, Some(job_type)) => {
            let job_ctx = JobContext {
                job,
                job_type,
                env: ctx.env,
                outbound: &outbound,
                started_at,
            };
            let limit = deadline_ms + DEADLINE_SLACK_MS;
            let run = crate::deadline::within(limit as u64, handlers::run(&job_ctx)).await;
            run.unwrap_or_else(|| {
                let message = format!("the job ran past its deadline of {deadline_ms} ms");
                HandlerRun::of(Err(JobError::new(ErrorClass::Timeout, message)))
            })
        }
        (None, None) => HandlerRun::of(Err(JobError::new(
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
        version: ctx.invocation.version.clone(),
        invocation: ctx.invocation.id.clone(),
        ran: Ran {
            handler: job_type.map_or("unknown", |t| t.handler().module()),
            bytes: outbound.bytes(),
            llm: ran.llm,
            artifacts: ran.artifacts,
        },
        lease_until: None, // the batch's, once every job has run
    };
    let policy = (job.retry_policy.as_deref())
        .and_then(JobRetry::from_stored)
        .unwrap_or_else(|| job_type.map_or(RetryPolicy::DEFAULT, |t| t.spec().retry));
    Ok(Attempt {
        started_at,
        finished_at,
        outcome,
        cost_cents: ran.cost_cents,
        follow_ups,
        policy,
        details,
    })
}
