//! Everything the consumer tells the outside about a job: one JSON log line per job event (the
//! shapes are shared `job_event`, the same as the sweep's rescuer writes), the handlers' own
//! span events, one Analytics Engine data point per recorded attempt, and the per-batch
//! `batch.completed` line the benchmark reads. Nothing here touches D1.

use jobs_shared::job::enqueue::EXPIRED_UNRUN;
use jobs_shared::job::family::Family;
use jobs_shared::job::job_outcome::Decision;
use jobs_shared::job::lease::LOST_ATTEMPT;
use jobs_shared::observe::analytics_points::{execution_point, Execution, Point};
use jobs_shared::observe::d1_stats::D1Stats;
use jobs_shared::observe::job_event::{
    decision_error, job_event, logs_success, outcome_events, run_outcome, success_log_percent,
    JobEventKind, JobRef, Settled,
};
use jobs_shared::observe::log_line::{emit, fault, LogLevel};
use jobs_shared::observe::span_events::{span_events_max, SpanEvents};
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use jobs_shared::runtime::analytics_write::write_points_to;
use jobs_shared::runtime::vars;
use jobs_shared::util::time_fmt::rfc3339;
use jobs_store::jobs::{Claimed, Exhausted, PastExpiry};
use serde_json::{json, Value};
use std::cell::RefCell;
use worker::Env;

use crate::delivery::Delivery;
use crate::job_context::JobContext;

/// The Analytics Engine binding (consumer/wrangler.toml). Absent (an older config, or a local
/// runtime without it), the data points are skipped and the logs still carry everything.
const DATASET_BINDING: &str = "METRICS";

fn job_ref<'a>(job: &'a Claimed, family: Family) -> JobRef<'a> {
    JobRef {
        id: &job.id,
        job_type: &job.job_type,
        queue: family.as_str(),
        attempt: job.attempts,
        correlation_id: job.correlation(),
    }
}

/// What one recorded attempt produces, for a whole batch: its log lines and its data point.
pub struct Recorded<'a> {
    pub job: &'a Claimed,
    pub decision: &'a Decision,
    pub duration_ms: i64,
    pub cost_cents: f64,
    /// The queue's delivery count of the message that ran it.
    pub delivery_attempts: u32,
}

/// The batch's attempts: each one's data point, and its lines, except a success's own line
/// unless `LOG_SUCCESS_PERCENT` keeps it (the batch's `batch.completed` counts it).
pub fn recorded(family: Family, attempts: &[Recorded<'_>], env: &Env) {
    let dataset = env.analytics_engine(DATASET_BINDING).ok();
    let mut warnings = Vec::new();
    let percent = success_log_percent(vars::string(env, "LOG_SUCCESS_PERCENT"), &mut warnings);
    warnings
        .iter()
        .for_each(|w| fault(LogLevel::Warn, "config", w));
    for a in attempts {
        if *a.decision != Decision::Succeed || logs_success(&a.job.id, percent) {
            let extra = [("delivery.attempts", json!(a.delivery_attempts))];
            let job = job_ref(a.job, family);
            outcome_events(&job, a.decision, a.duration_ms, &extra)
                .into_iter()
                .for_each(|line| emit(&line));
        }
    }
    if let Some(dataset) = &dataset {
        let points: Vec<Point> = attempts.iter().map(|a| point(family, a)).collect();
        write_points_to(dataset, &points);
    }
}

/// The attempt's point, laid out as `analytics_points::EXECUTION` says.
fn point<'a>(family: Family, a: &'a Recorded<'_>) -> Point<'a> {
    execution_point(&Execution {
        job_type: &a.job.job_type,
        family: family.as_str(),
        outcome: run_outcome(a.decision),
        error_class: decision_error(a.decision).map_or("", |e| e.class.as_str()),
        duration_ms: a.duration_ms as f64,
        attempt: f64::from(a.job.attempts),
        cost_cents: a.cost_cents,
    })
}

/// `job.skipped`: a delivered message ran nothing; `reason` says why and `action` whether the
/// message was acked or comes back later.
pub fn skipped(delivery: &Delivery, family: Family, reason: &str, retry_secs: Option<u64>) {
    let Ok(message) = &delivery.message else {
        return;
    };
    let job = JobRef {
        id: &message.id,
        job_type: &message.job_type,
        queue: family.as_str(),
        attempt: 0,
        correlation_id: message.cid.as_deref().unwrap_or(&message.id),
    };
    let extra = [
        ("reason", json!(reason)),
        ("delivery.attempts", json!(delivery.delivery_attempts)),
        ("message.retry_secs", json!(retry_secs)),
    ];
    emit(&job_event(JobEventKind::Skipped, &job, None, None, &extra));
}

/// A job the claim ended without running it.
fn ended_ref(family: Family, job: &Exhausted) -> JobRef<'_> {
    JobRef {
        id: &job.id,
        job_type: &job.job_type,
        queue: family.as_str(),
        attempt: job.attempts,
        correlation_id: job.correlation_id.as_deref().unwrap_or(&job.id),
    }
}

/// `job.interrupted` then `job.exhausted`: the claim found the job's last attempt lost (its
/// lease ran out) and ended the job `dead`.
pub fn exhausted_on_claim(family: Family, job: &Exhausted) {
    let job = ended_ref(family, job);
    let error = JobError::new(ErrorClass::LeaseExpired, LOST_ATTEMPT);
    for kind in [JobEventKind::Interrupted, JobEventKind::Exhausted] {
        emit(&job_event(kind, &job, None, Some(&error), &[]));
    }
}

/// `job.skipped` (reason `expired`, error class `expired`): the claim found the job past its
/// `expires_at` and ended it `skipped` without running it.
pub fn expired_on_claim(family: Family, expired: &PastExpiry) {
    let error = JobError::new(ErrorClass::Expired, EXPIRED_UNRUN);
    let extra = [
        ("reason", json!("expired")),
        ("job.expires_at", json!(rfc3339(expired.expires_at))),
    ];
    let (job, kind) = (ended_ref(family, &expired.job), JobEventKind::Skipped);
    emit(&job_event(kind, &job, None, Some(&error), &extra));
}

/// A handler's span events for one attempt (shared `span_events`): `once` for a per-job event,
/// `each` for a per-source or per-item one (bounded by `SPAN_EVENTS_MAX`); when it goes out of
/// scope, the `events.suppressed` line for those past the bound.
pub struct SpanLog<'a> {
    events: RefCell<SpanEvents<'a>>,
}

impl<'a> SpanLog<'a> {
    pub fn of(ctx: &'a JobContext<'_>) -> SpanLog<'a> {
        let mut warnings = Vec::new();
        let max = span_events_max(vars::string(ctx.env, "SPAN_EVENTS_MAX"), &mut warnings);
        for warning in warnings {
            fault(LogLevel::Warn, "config", warning);
        }
        let job = job_ref(ctx.job, ctx.job_type.family());
        SpanLog {
            events: RefCell::new(SpanEvents::new(job, max)),
        }
    }

    pub fn once(&self, name: &str, level: &str, attrs: &[(&str, Value)]) {
        emit(&self.events.borrow().once(name, level, attrs));
    }

    pub fn each(&self, name: &'static str, level: &str, attrs: &[(&str, Value)]) {
        if let Some(line) = self.events.borrow_mut().each(name, level, attrs) {
            emit(&line);
        }
    }
}

impl Drop for SpanLog<'_> {
    fn drop(&mut self) {
        if let Some(line) = self.events.borrow().summary() {
            emit(&line);
        }
    }
}

/// What a batch did, for its `batch.completed` line.
pub struct BatchDone<'a> {
    pub queue: &'a str,
    pub messages: usize,
    /// Its D1 work (what the benchmark counts).
    pub stats: &'a D1Stats,
    /// The attempts it settled, by outcome, and their durations.
    pub settled: &'a Settled,
    /// The calls flow control made to its keys' limiters (Durable Object requests).
    pub limiter_calls: u32,
    pub duration_ms: i64,
    /// The invocation id its run records carry.
    pub invocation: &'a str,
}

/// One line per batch: its size, wall time and D1 work, what it settled, and its invocation.
pub fn batch_completed(done: &BatchDone<'_>) {
    let stats = done.stats;
    let mut line = json!({
        "event": "batch.completed",
        "level": "info",
        "queue": done.queue,
        "invocation": done.invocation,
        "messages": done.messages,
        "duration_ms": done.duration_ms,
        "d1.round_trips": stats.round_trips,
        "d1.rows_read": stats.rows_read,
        "d1.rows_written": stats.rows_written,
        "d1.sql_ms": stats.sql_ms(),
    });
    for (name, value) in done.settled.fields() {
        line[name] = value;
    }
    if done.limiter_calls > 0 {
        line["flow.limiter_calls"] = json!(done.limiter_calls);
    }
    emit(&line);
}
