//! How long a consumer batch may hold its jobs, and how it keeps that hold honest: every job
//! has a deadline, the lease outlasts the longest deadline of the batch, a heartbeat extends
//! the lease while handlers run, and a job that could not finish before the invocation's wall
//! time ends is released unstarted rather than started (docs/guarantees.md "Guarantees and how they
//! hold").

use crate::job::family::Family;
use crate::job::job_outcome::{decide, AttemptEnd, Decision};
use crate::job::job_type::JobType;
use crate::job::payloads::MAX_PAYLOAD_TIMEOUT_MS;
use crate::retry::error_class::{ErrorClass, JobError};
use crate::retry::retry_policy::{QueueDelayLimit, RetryPolicy};
use crate::util::config_var::int_var;

/// The error of an attempt whose lease ran out with no outcome recorded: its run record's, and
/// the job's when that was its last attempt.
pub const LOST_ATTEMPT: &str =
    "the lease expired before an outcome was recorded (the worker died or hung)";

/// The run record of an attempt an operator's skip ended while it ran.
pub const SKIPPED_ATTEMPT: &str =
    "an operator skipped the job while this attempt ran; what it did after is not recorded";

/// The run record of an attempt its app's cancel ended while it ran (the job ends `skipped`).
pub const CANCELLED_BY_APP_ATTEMPT: &str =
    "its app cancelled the job while this attempt ran; what it did after is not recorded";

/// What follows a lost attempt (attempt `attempts` of `max_attempts`): decided by [`decide`],
/// as every failed attempt is, with the lost attempt's error. It is due again at once (the
/// lease already waited), so only its attempts left matter: the policy's backoff never applies.
pub fn after_lost_attempt(
    attempts: u32,
    max_attempts: u32,
    now_ms: i64,
    limit: QueueDelayLimit,
) -> Decision {
    let lost = JobError::new(ErrorClass::LeaseExpired, LOST_ATTEMPT).with_retry_after(Some(0));
    decide(&AttemptEnd {
        outcome: Err(&lost),
        attempt: attempts,
        max_attempts,
        policy: &RetryPolicy::DEFAULT,
        jitter: 0.0,
        now_ms,
        limit,
    })
}

/// Time a handler may still need after its deadline to return (abort, close a browser).
const DEADLINE_GRACE_MS: i64 = 5_000;

/// What a job's deadline adds to its timeout: the time its requests may wait for one of the
/// batch's connections (other jobs hold them), so a timeout is always the target's.
pub const CONNECTION_WAIT_MS: i64 = 30_000;

/// How long before its deadline a job's last request must end: room for the writes that
/// follow it (an LLM call's spend, a feed's items).
pub const WRITE_RESERVE_MS: i64 = 5_000;

/// Consumer settings that bound a batch (vars of the consumer Worker).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConsumerLimits {
    /// Outbound connections open at once per batch (`OUTBOUND_CONNECTIONS`): Workers keep 6
    /// open per invocation and queue the rest, which would eat into their timeouts.
    pub connections: usize,
    /// Subrequests per invocation (`SUBREQUEST_LIMIT`): 1000 on the paid plan, 50 on free.
    pub subrequests: u32,
    /// The invocation's wall time (`CONSUMER_WALL_SECS`): a queue consumer has 15 minutes.
    pub wall_ms: i64,
    /// How often a running batch extends its leases (`LEASE_HEARTBEAT_SECS`); default: a third
    /// of the lease.
    pub heartbeat_ms: Option<i64>,
}

impl ConsumerLimits {
    pub const DEFAULT: ConsumerLimits = ConsumerLimits {
        connections: 6,
        subrequests: 1000,
        wall_ms: 900_000,
        heartbeat_ms: None,
    };

    /// The settings from the Worker's vars; bad values keep their default and are reported.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> (ConsumerLimits, Vec<String>) {
        let mut warnings = Vec::new();
        let mut read =
            |name: &str, max: i64| int_var(name, var(name), max, "the default", &mut warnings);
        let d = ConsumerLimits::DEFAULT;
        let limits = ConsumerLimits {
            connections: read("OUTBOUND_CONNECTIONS", 6).map_or(d.connections, |n| n as usize),
            subrequests: read("SUBREQUEST_LIMIT", 100_000).map_or(d.subrequests, |n| n as u32),
            wall_ms: read("CONSUMER_WALL_SECS", 900).map_or(d.wall_ms, |n| n * 1000),
            heartbeat_ms: read("LEASE_HEARTBEAT_SECS", 3600).map(|n| n * 1000),
        };
        (limits, warnings)
    }

    /// Whether a job with `deadline_ms` may still start at `now_ms` in a batch that began at
    /// `batch_started_ms`: it must be able to end, grace included, inside the wall time.
    pub fn may_start(&self, batch_started_ms: i64, now_ms: i64, deadline_ms: i64) -> bool {
        now_ms + deadline_ms + DEADLINE_GRACE_MS <= batch_started_ms + self.wall_ms
    }

    /// How often to extend a lease of `lease_ms`: the setting, but never less often than a
    /// third of the lease.
    pub fn heartbeat_every_ms(&self, lease_ms: i64) -> i64 {
        self.heartbeat_ms
            .map_or(lease_ms / 3, |ms| ms.min(lease_ms / 3))
    }
}

/// The longest a job of `job_type` may run: its type's timeout, or for a type whose payload may
/// set its own (`payload_timeout`), that `timeout_ms` up to [`MAX_PAYLOAD_TIMEOUT_MS`]; plus
/// the connection wait it may meet.
pub fn deadline_ms(job_type: JobType, payload_timeout_ms: Option<u32>) -> i64 {
    let spec = job_type.spec();
    let timeout = match payload_timeout_ms {
        Some(own) if spec.payload_timeout => own.min(MAX_PAYLOAD_TIMEOUT_MS),
        _ => spec.timeout_ms,
    };
    i64::from(timeout) + CONNECTION_WAIT_MS
}

/// The lease a batch claims its jobs with: the family's, or twice the longest deadline any of
/// `types` can have if that is longer (priority aging can move a slow type into a family with
/// a short lease). The heartbeat extends it while handlers run.
pub fn lease_ms(family: Family, types: impl IntoIterator<Item = JobType>) -> i64 {
    types
        .into_iter()
        .map(|t| 2 * (deadline_ms(t, Some(MAX_PAYLOAD_TIMEOUT_MS)) + DEADLINE_GRACE_MS))
        .fold(family.lease_ms(), i64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn a_lost_attempt_is_due_again_at_once_or_dead_on_the_last() {
        let limit = QueueDelayLimit::DEFAULT;
        let Decision::Retry { error, delay_secs } = after_lost_attempt(1, 5, 0, limit) else {
            panic!("attempts left: retried");
        };
        assert_eq!((error.class, delay_secs), (ErrorClass::LeaseExpired, 0));
        let Decision::Dead { error } = after_lost_attempt(5, 5, 0, limit) else {
            panic!("the last attempt: dead");
        };
        assert_eq!(error.class, ErrorClass::LeaseExpired);
        assert!(error.message.starts_with(LOST_ATTEMPT), "{}", error.message);
    }

    #[test]
    fn settings_read_from_vars_with_defaults() {
        let (limits, warnings) = ConsumerLimits::from_vars(|_| None);
        assert_eq!(limits, ConsumerLimits::DEFAULT);
        assert!(warnings.is_empty());
        let vars: HashMap<&str, &str> = [
            ("OUTBOUND_CONNECTIONS", "2"),
            ("SUBREQUEST_LIMIT", "50"),
            ("CONSUMER_WALL_SECS", "0"),
            ("LEASE_HEARTBEAT_SECS", "1"),
        ]
        .into();
        let (limits, warnings) =
            ConsumerLimits::from_vars(|name| vars.get(name).map(|v| v.to_string()));
        assert_eq!(limits.connections, 2);
        assert_eq!(limits.subrequests, 50);
        assert_eq!(limits.wall_ms, 900_000);
        assert_eq!(limits.heartbeat_every_ms(300_000), 1_000);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(ConsumerLimits::DEFAULT.heartbeat_every_ms(300_000), 100_000);
        let rare = ConsumerLimits {
            heartbeat_ms: Some(600_000),
            ..ConsumerLimits::DEFAULT
        };
        assert_eq!(
            rare.heartbeat_every_ms(300_000),
            100_000,
            "never past the lease"
        );
    }

    #[test]
    fn jobs_start_only_when_they_can_end_inside_the_wall_time() {
        let limits = ConsumerLimits::DEFAULT;
        assert!(limits.may_start(0, 0, 300_000));
        assert!(limits.may_start(0, 595_000, 300_000));
        assert!(!limits.may_start(0, 595_001, 300_000));
        assert!(!limits.may_start(0, 900_000, 0));
    }

    #[test]
    fn a_payload_sets_the_deadline_only_where_its_type_lets_it() {
        let wait = CONNECTION_WAIT_MS;
        assert_eq!(deadline_ms(JobType::HTTP, Some(90_000)), 90_000 + wait);
        assert_eq!(
            deadline_ms(JobType::SCREENSHOT_CAPTURE, Some(100_000)),
            100_000 + wait
        );
        assert_eq!(
            deadline_ms(JobType::SCREENSHOT_CAPTURE, None),
            60_000 + wait,
            "the type's"
        );
        assert_eq!(
            deadline_ms(JobType::HTTP, Some(u32::MAX)),
            120_000 + wait,
            "capped"
        );
        assert_eq!(
            deadline_ms(JobType::NOOP, Some(90_000)),
            10_000 + wait,
            "noop has none"
        );
    }

    #[test]
    fn leases_outlast_every_deadline_whatever_family_a_type_is_in() {
        for family in Family::ALL {
            for t in JobType::ALL {
                let lease = lease_ms(family, [t]);
                assert!(
                    lease >= 2 * deadline_ms(t, Some(MAX_PAYLOAD_TIMEOUT_MS)),
                    "{family:?} {t:?}"
                );
                assert!(lease >= family.lease_ms());
            }
        }
        // A 300 s type aged into `high` (lease 300 s) gets a longer lease than its family's.
        assert!(lease_ms(Family::High, [JobType::LINK_HEALTH_CHECK]) > Family::High.lease_ms());
        assert_eq!(lease_ms(Family::High, []), Family::High.lease_ms());
        assert_eq!(
            deadline_ms(JobType::HTTP, Some(5_000)),
            5_000 + CONNECTION_WAIT_MS
        );
        assert_eq!(
            deadline_ms(JobType::HTTP, None),
            30_000 + CONNECTION_WAIT_MS
        );
    }
}
