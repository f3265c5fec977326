//! The job events every Worker logs, shaped here so the log schema is one thing: one JSON
//! object per line with the span attributes (`job.id`, `job.type`, `job.queue`,
//! `job.attempt`, `job.handler`), the correlation id, and per event the duration and the
//! error's class and message. Workers Logs indexes these fields as they are.

use serde_json::{json, Map, Value};

use crate::job::job_outcome::Decision;
use crate::job::job_type::JobType;
use crate::retry::error_class::JobError;
use crate::util::config_var::int_var;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobEventKind {
    /// The attempt succeeded.
    Completed,
    /// The attempt failed (always followed by `RetryScheduled` or `Exhausted`).
    Failed,
    /// Another attempt comes after a backoff.
    RetryScheduled,
    /// No attempt follows: the job is dead and will be escalated.
    Exhausted,
    /// The attempt never reported: its lease ran out (the worker died or hung).
    Interrupted,
    /// A delivered message ran nothing (superseded, duplicate, finished, paused, not due), or
    /// an attempt decided not to do its work (budget hard stop).
    Skipped,
}

impl JobEventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            JobEventKind::Completed => "job.completed",
            JobEventKind::Failed => "job.failed",
            JobEventKind::RetryScheduled => "job.retry_scheduled",
            JobEventKind::Exhausted => "job.exhausted",
            JobEventKind::Interrupted => "job.interrupted",
            JobEventKind::Skipped => "job.skipped",
        }
    }

    /// The console level the line is written at (Workers Logs filters by it).
    pub fn level(self) -> &'static str {
        match self {
            JobEventKind::Completed | JobEventKind::Skipped => "info",
            JobEventKind::Failed | JobEventKind::RetryScheduled => "warn",
            JobEventKind::Exhausted | JobEventKind::Interrupted => "error",
        }
    }
}

/// Who the event is about.
#[derive(Clone, Copy, Debug)]
pub struct JobRef<'a> {
    pub id: &'a str,
    pub job_type: &'a str,
    /// The family, logged as `job.queue` (`high`, `default`, ...).
    pub queue: &'a str,
    pub attempt: u32,
    pub correlation_id: &'a str,
}

/// The `job.handler` attribute: the module that runs the type ([`crate::job::registry::Handler::module`]).
pub fn handler_name(job_type: &str) -> String {
    match JobType::parse(job_type) {
        Some(t) => format!("consumer::handlers::{}", t.handler().module()),
        None => "unknown".to_string(),
    }
}

/// A line's start: the event, its level and who it is about (the span attributes and the
/// correlation id). Job events and handlers' span events (`observe::span_events`) share it.
pub fn span_line(event: &str, level: &str, job: &JobRef<'_>) -> Map<String, Value> {
    let mut line = Map::new();
    line.insert("event".into(), event.into());
    line.insert("level".into(), level.into());
    line.insert("job.id".into(), job.id.into());
    line.insert("job.type".into(), job.job_type.into());
    line.insert("job.queue".into(), job.queue.into());
    line.insert("job.attempt".into(), job.attempt.into());
    line.insert("job.handler".into(), handler_name(job.job_type).into());
    line.insert("correlation_id".into(), job.correlation_id.into());
    line
}

/// One log line's object. `extra` adds event-specific fields (e.g. `retry.delay_secs`).
pub fn job_event(
    kind: JobEventKind,
    job: &JobRef<'_>,
    duration_ms: Option<i64>,
    error: Option<&JobError>,
    extra: &[(&str, Value)],
) -> Value {
    let mut line = span_line(kind.as_str(), kind.level(), job);
    if let Some(ms) = duration_ms {
        line.insert("duration_ms".into(), ms.into());
    }
    if let Some(error) = error {
        line.insert("error.class".into(), error.class.as_str().into());
        line.insert("error.message".into(), error.message.clone().into());
    }
    for (key, value) in extra {
        line.insert((*key).into(), value.clone());
    }
    Value::Object(line)
}

/// A decision as its run record names it (job_runs.outcome, the histogram's `status`).
pub fn run_outcome(decision: &Decision) -> &'static str {
    match decision {
        Decision::Succeed => "succeeded",
        Decision::Retry { .. } | Decision::RetryLater { .. } => "retrying",
        Decision::Dead { .. } => "dead",
        Decision::Skip { .. } => "skipped",
    }
}

/// The failure a decision carries, if any.
pub fn decision_error(decision: &Decision) -> Option<&JobError> {
    match decision {
        Decision::Succeed => None,
        Decision::Retry { error, .. }
        | Decision::RetryLater { error, .. }
        | Decision::Dead { error }
        | Decision::Skip { error } => Some(error),
    }
}

/// The lines an attempt's recorded decision produces: completed; or failed then
/// retry_scheduled (with the wait); or failed then exhausted; or skipped (`reason`: the error's
/// class, e.g. `budget_hard_stop`). `attempt_extra` goes on the
/// attempt's own line (completed or failed). There is no separate line for the start: as a
/// tracing span would, the attempt's line carries it (a lost attempt is `job.interrupted`), which
/// keeps Workers Logs at one line per successful job.
pub fn outcome_events(
    job: &JobRef<'_>,
    decision: &Decision,
    duration_ms: i64,
    attempt_extra: &[(&str, Value)],
) -> Vec<Value> {
    let Some(error) = decision_error(decision) else {
        let completed = job_event(
            JobEventKind::Completed,
            job,
            Some(duration_ms),
            None,
            attempt_extra,
        );
        return vec![completed];
    };
    if let Decision::Skip { .. } = decision {
        let mut extra = vec![("reason", json!(error.class.as_str()))];
        extra.extend(attempt_extra.iter().cloned());
        let skipped = job_event(
            JobEventKind::Skipped,
            job,
            Some(duration_ms),
            Some(error),
            &extra,
        );
        return vec![skipped];
    }
    let (next, extra) = match decision {
        Decision::Retry { delay_secs, .. } => (
            JobEventKind::RetryScheduled,
            vec![("retry.delay_secs", json!(delay_secs))],
        ),
        Decision::RetryLater { until_ms, .. } => (
            JobEventKind::RetryScheduled,
            vec![("retry.at", crate::util::time_fmt::rfc3339(*until_ms).into())],
        ),
        _ => (JobEventKind::Exhausted, Vec::new()),
    };
    vec![
        job_event(
            JobEventKind::Failed,
            job,
            Some(duration_ms),
            Some(error),
            attempt_extra,
        ),
        job_event(next, job, None, Some(error), &extra),
    ]
}

/// `LOG_SUCCESS_PERCENT`: the share of succeeded attempts that get their own `job.completed`
/// line, 1-100 (docs/operating.md "Log schema"). Unset: none, since `batch.completed` counts them
/// and Workers Logs bills per line; failures, retries, dead jobs and skips always get theirs.
pub fn success_log_percent(value: Option<String>, warnings: &mut Vec<String>) -> u32 {
    int_var("LOG_SUCCESS_PERCENT", value, 100, "none", warnings).map_or(0, |n| n as u32)
}

/// Whether a succeeded attempt of `job_id` is logged at `percent`: chosen by the id, so a job's
/// attempts are logged alike and a sample is the same from one run to the next.
pub fn logs_success(job_id: &str, percent: u32) -> bool {
    let hash = job_id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    hash % 100 < u64::from(percent)
}

/// What a batch settled, for its `batch.completed` line: the attempts by outcome, and their
/// durations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Settled {
    pub succeeded: u32,
    pub retried: u32,
    pub dead: u32,
    pub skipped: u32,
    pub duration_ms_sum: i64,
    pub duration_ms_max: i64,
}

impl Settled {
    pub fn add(&mut self, decision: &Decision, duration_ms: i64) {
        let count = match run_outcome(decision) {
            "succeeded" => &mut self.succeeded,
            "retrying" => &mut self.retried,
            "dead" => &mut self.dead,
            _ => &mut self.skipped,
        };
        *count += 1;
        self.duration_ms_sum += duration_ms;
        self.duration_ms_max = self.duration_ms_max.max(duration_ms);
    }

    /// Both together (a batch's minutes, summed).
    pub fn merged(self, other: &Settled) -> Settled {
        Settled {
            succeeded: self.succeeded + other.succeeded,
            retried: self.retried + other.retried,
            dead: self.dead + other.dead,
            skipped: self.skipped + other.skipped,
            duration_ms_sum: self.duration_ms_sum + other.duration_ms_sum,
            duration_ms_max: self.duration_ms_max.max(other.duration_ms_max),
        }
    }

    /// Its fields on the `batch.completed` line.
    pub fn fields(&self) -> [(&'static str, Value); 6] {
        [
            ("jobs.succeeded", json!(self.succeeded)),
            ("jobs.retried", json!(self.retried)),
            ("jobs.dead", json!(self.dead)),
            ("jobs.skipped", json!(self.skipped)),
            ("attempts.duration_ms.sum", json!(self.duration_ms_sum)),
            ("attempts.duration_ms.max", json!(self.duration_ms_max)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::error_class::ErrorClass;

    const JOB: JobRef<'static> = JobRef {
        id: "01J",
        job_type: "rss_feed_refresh",
        queue: "default",
        attempt: 2,
        correlation_id: "4bf92f3577b34da6a3ce929d0e0e4736",
    };

    #[test]
    fn every_line_carries_the_span_attributes() {
        let line = job_event(JobEventKind::Skipped, &JOB, None, None, &[]);
        assert_eq!(
            line,
            json!({
                "event": "job.skipped", "level": "info", "job.id": "01J",
                "job.type": "rss_feed_refresh", "job.queue": "default", "job.attempt": 2,
                "job.handler": "consumer::handlers::rss_refresh",
                "correlation_id": "4bf92f3577b34da6a3ce929d0e0e4736",
            })
        );
    }

    #[test]
    fn outcomes_name_their_events_with_duration_and_error() {
        let names = |d: &Decision| -> Vec<String> {
            outcome_events(&JOB, d, 12, &[])
                .iter()
                .map(|l| l["event"].as_str().unwrap().to_string())
                .collect()
        };
        let error = JobError::new(ErrorClass::ServerError, "HTTP 503");
        assert_eq!(names(&Decision::Succeed), ["job.completed"]);
        let retry = Decision::Retry {
            error: error.clone(),
            delay_secs: 30,
        };
        assert_eq!(names(&retry), ["job.failed", "job.retry_scheduled"]);
        let hold = Decision::RetryLater {
            error: error.clone(),
            until_ms: 0,
        };
        assert_eq!(names(&hold), ["job.failed", "job.retry_scheduled"]);
        let dead = Decision::Dead { error };
        assert_eq!(names(&dead), ["job.failed", "job.exhausted"]);
        let skip = Decision::Skip {
            error: JobError::new(ErrorClass::BudgetHardStop, "budget spent"),
        };
        let skipped = &outcome_events(&JOB, &skip, 7, &[("delivery.attempts", json!(1))])[0];
        assert_eq!(names(&skip), ["job.skipped"]);
        assert_eq!(
            [
                &skipped["reason"],
                &skipped["error.message"],
                &skipped["level"]
            ],
            [
                &json!("budget_hard_stop"),
                &json!("budget spent"),
                &json!("info")
            ]
        );
        assert_eq!(run_outcome(&skip), "skipped");

        let extra = [("delivery.attempts", json!(3))];
        let lines = outcome_events(&JOB, &retry, 12, &extra);
        assert_eq!(lines[0]["duration_ms"], 12);
        assert_eq!(lines[0]["delivery.attempts"], 3, "on the attempt's line");
        assert!(lines[1].get("delivery.attempts").is_none());
        assert_eq!(lines[0]["error.class"], "server_error");
        assert_eq!(lines[0]["error.message"], "HTTP 503");
        assert_eq!(lines[0]["level"], "warn");
        assert_eq!(lines[1]["retry.delay_secs"], 30);
        assert_eq!(outcome_events(&JOB, &dead, 1, &[])[1]["level"], "error");
        let completed = &outcome_events(&JOB, &Decision::Succeed, 5, &extra)[0];
        assert_eq!(completed["duration_ms"], 5);
        assert_eq!(completed["delivery.attempts"], 3);
    }

    #[test]
    fn handler_names() {
        assert_eq!(handler_name("http"), "consumer::handlers::http");
        assert_eq!(
            handler_name("rss_feed_refresh"),
            "consumer::handlers::rss_refresh"
        );
        assert_eq!(handler_name("nope"), "unknown");
    }

    #[test]
    fn successes_are_logged_at_the_percent_and_settled_counts_everything() {
        let ids: Vec<String> = (0..1000).map(|i| format!("01JOB{i:05}")).collect();
        let logged = |percent| ids.iter().filter(|id| logs_success(id, percent)).count();
        assert_eq!(logged(0), 0);
        assert_eq!(logged(100), 1000);
        assert!((400..600).contains(&logged(50)), "{}", logged(50));
        assert!(
            ids.iter()
                .all(|id| logs_success(id, 10) <= logs_success(id, 20)),
            "a larger share keeps the smaller's"
        );

        let mut warnings = Vec::new();
        assert_eq!(success_log_percent(None, &mut warnings), 0);
        assert_eq!(success_log_percent(Some("25".into()), &mut warnings), 25);
        assert_eq!(success_log_percent(Some("150".into()), &mut warnings), 0);
        assert_eq!(warnings.len(), 1);

        let mut settled = Settled::default();
        settled.add(&Decision::Succeed, 5);
        settled.add(&Decision::Succeed, 9);
        let error = JobError::new(crate::retry::error_class::ErrorClass::ServerError, "x");
        settled.add(&Decision::Dead { error }, 2);
        assert_eq!(
            (
                settled.succeeded,
                settled.dead,
                settled.duration_ms_sum,
                settled.duration_ms_max
            ),
            (2, 1, 16, 9)
        );
    }
}
