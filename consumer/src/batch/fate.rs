//! What becomes of one claimed job in a batch: handed back unstarted, or run and decided. One
//! [`Fate`] per job, rather than a run's optional parts, so that every stage after the run
//! reads which it is and the compiler holds each stage to both.

use jobs_shared::job::job_outcome::{decide, AttemptEnd, Decision};
use jobs_shared::job::job_type::JobType;
use jobs_shared::job::run_details::RunDetails;
use jobs_shared::job::stored_result::{stored_result_within, MAX_RESULT_BYTES};
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use jobs_shared::retry::retry_policy::{QueueDelayLimit, RetryPolicy};
use jobs_store::jobs::{Claimed, Finished};
use serde_json::Value;

use crate::chain;
use crate::delivery::{Delivery, Verdict};
use crate::job_context::Release;
use crate::job_events::Recorded;

/// One claimed job through the batch, with the message that claimed it.
pub struct BatchJob<'a> {
    pub delivery: &'a Delivery,
    pub job: &'a Claimed,
    pub fate: Fate,
}

pub enum Fate {
    /// Handed back unstarted: its claim is undone (no attempt spent, no run record) and its
    /// message comes back after the release's delay.
    Released(Release),
    /// Ran to an outcome: what follows it is decided and its chain's move planned.
    Decided(Decided),
}

pub struct Decided {
    pub attempt: Attempt,
    pub decision: Decision,
    pub chain: chain::Planned,
}

/// One handler run, timed.
pub struct Attempt {
    pub started_at: i64,
    pub finished_at: i64,
    pub outcome: Result<Option<Value>, JobError>,
    /// What the attempt spent (see job_context::HandlerRun).
    pub cost_cents: f64,
    /// Checked follow-up jobs the handler returned (see crate::chain).
    pub follow_ups: Vec<Value>,
    /// The job's own retry policy, else its type's (the default one for a type this build
    /// does not know).
    pub policy: RetryPolicy,
    /// What ran it and what it produced, for its run record.
    pub details: RunDetails,
}

impl Decided {
    /// Decides what follows `attempt` of `job` (shared `decide`, with the jitter's randomness
    /// `jitter`) and plans its chain's move, its follow-ups taken from the attempt.
    pub fn of(job: &Claimed, mut attempt: Attempt, jitter: f64, limit: QueueDelayLimit) -> Decided {
        let follow_ups = std::mem::take(&mut attempt.follow_ups);
        let (decision, chain) = decide_and_plan(job, &attempt, follow_ups, jitter, limit);
        Decided {
            attempt,
            decision,
            chain,
        }
    }

    /// Decides the attempt again as failed with an internal error: its outcome could not be
    /// recorded (`message` says why), so it cannot count as a success.
    pub fn fail_unrecorded(
        &mut self,
        job: &Claimed,
        message: String,
        jitter: f64,
        limit: QueueDelayLimit,
    ) {
        self.attempt.outcome = Err(JobError::new(ErrorClass::Internal, message));
        (self.decision, self.chain) =
            decide_and_plan(job, &self.attempt, Vec::new(), jitter, limit);
    }
}

fn decide_and_plan(
    job: &Claimed,
    attempt: &Attempt,
    follow_ups: Vec<Value>,
    jitter: f64,
    limit: QueueDelayLimit,
) -> (Decision, chain::Planned) {
    let decision = decide(&AttemptEnd {
        outcome: attempt.outcome.as_ref().map(|_| ()),
        attempt: job.attempts,
        max_attempts: job.max_attempts,
        policy: &attempt.policy,
        jitter,
        now_ms: attempt.finished_at,
        limit,
    });
    let result = attempt.outcome.as_ref().ok().and_then(Option::as_ref);
    let chain = chain::plan(
        job,
        &decision,
        follow_ups,
        result,
        attempt.finished_at,
        limit,
    );
    (decision, chain)
}

/// The largest result `job` keeps: its type's (a group's report may be larger than a remote's
/// answer), or a stored result's for a type this build does not know.
fn max_result_bytes(job: &Claimed) -> usize {
    JobType::parse(&job.job_type).map_or(MAX_RESULT_BYTES, |t| t.spec().max_result_bytes)
}

impl<'a> BatchJob<'a> {
    pub fn decided(&self) -> Option<&Decided> {
        match &self.fate {
            Fate::Decided(decided) => Some(decided),
            Fate::Released(_) => None,
        }
    }

    /// What the record writes for this run; `None` for a job released unstarted.
    pub fn finished(&self) -> Option<Finished<'_>> {
        let Decided {
            attempt,
            decision,
            chain,
        } = self.decided()?;
        Some(Finished {
            job: self.job,
            started_at: attempt.started_at,
            finished_at: attempt.finished_at,
            decision,
            result: (attempt.outcome.as_ref().ok())
                .and_then(Option::as_ref)
                .map(|result| stored_result_within(result, max_result_bytes(self.job))),
            cost_cents: attempt.cost_cents,
            details: &attempt.details,
            chain: chain.write(),
        })
    }

    /// What the logs and Analytics Engine are told of this run; `None` when released.
    pub fn recorded(&self) -> Option<Recorded<'_>> {
        let Decided {
            attempt, decision, ..
        } = self.decided()?;
        Some(Recorded {
            job: self.job,
            decision,
            duration_ms: attempt.finished_at - attempt.started_at,
            cost_cents: attempt.cost_cents,
            delivery_attempts: self.delivery.delivery_attempts,
        })
    }
}

/// What becomes of a run's message once its outcome is recorded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MessageEnd {
    /// Acked or retried.
    Settled(Verdict),
    /// Sent to the family's DLQ, then acked.
    DeadLettered,
}

impl Fate {
    pub fn message_end(&self) -> MessageEnd {
        let decision = match self {
            // Released unstarted: it comes back, with no attempt spent.
            Fate::Released(release) => {
                let delay_secs = release.retry_secs;
                return MessageEnd::Settled(Verdict::Retry { delay_secs });
            }
            Fate::Decided(decided) => &decided.decision,
        };
        match decision {
            // A held job's message is the sweep's to send when it is due.
            Decision::Succeed | Decision::RetryLater { .. } | Decision::Skip { .. } => {
                MessageEnd::Settled(Verdict::Ack)
            }
            Decision::Retry { delay_secs, .. } => MessageEnd::Settled(Verdict::Retry {
                delay_secs: (*delay_secs).into(),
            }),
            Decision::Dead { .. } => MessageEnd::DeadLettered,
        }
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use jobs_shared::job::chain::ChainMove;
    use jobs_shared::job::run_details::Bytes;
    use jobs_shared::job::run_details::{Ran, RunDetails};
    use jobs_shared::retry::retry_policy::RetryPolicy;
    use serde_json::json;

    /// A claimed `noop` job on its first attempt of 3.
    pub fn claimed(id: &str) -> Claimed {
        Claimed {
            id: id.into(),
            job_type: "noop".into(),
            payload: "{}".into(),
            attempts: 1,
            max_attempts: 3,
            runs: 1,
            parent_id: None,
            chain_step: None,
            next_steps: None,
            chain_status: None,
            correlation_id: None,
            retry_policy: None,
            enqueued_by: None,
            created_at: 0,
            run_at: 0,
            flow_key: None,
            flow_limits: None,
            inputs: None,
            group_id: None,
            group_status: None,
            callback: None,
        }
    }

    fn attempt(outcome: Result<Option<serde_json::Value>, JobError>) -> Attempt {
        Attempt {
            started_at: 1_000,
            finished_at: 3_000,
            outcome,
            cost_cents: 0.5,
            follow_ups: Vec::new(),
            policy: RetryPolicy::DEFAULT,
            details: RunDetails {
                version: "local".into(),
                invocation: "test".into(),
                ran: Ran {
                    handler: "noop",
                    bytes: Bytes::default(),
                    llm: None,
                    artifacts: Vec::new(),
                },
                lease_until: None,
            },
        }
    }

    const LIMIT: QueueDelayLimit = QueueDelayLimit::DEFAULT;

    #[test]
    fn a_success_is_recorded_with_its_result_and_acked() {
        let job = claimed("a");
        let decided = Decided::of(&job, attempt(Ok(Some(json!({"n": 1})))), 0.5, LIMIT);
        assert_eq!(decided.decision, Decision::Succeed);
        let fate = Fate::Decided(decided);
        assert_eq!(fate.message_end(), MessageEnd::Settled(Verdict::Ack));
        let Fate::Decided(decided) = &fate else {
            unreachable!()
        };
        assert!(matches!(decided.chain.chain, ChainMove::None));
    }

    #[test]
    fn a_retryable_failure_retries_its_message_after_the_backoff() {
        let job = claimed("a");
        let error = JobError::new(ErrorClass::ServerError, "503").with_retry_after(Some(40));
        let fate = Fate::Decided(Decided::of(&job, attempt(Err(error)), 0.5, LIMIT));
        assert_eq!(
            fate.message_end(),
            MessageEnd::Settled(Verdict::Retry { delay_secs: 40 })
        );
    }

    #[test]
    fn the_last_attempt_failing_dead_letters_its_message() {
        let job = Claimed {
            attempts: 3,
            ..claimed("a")
        };
        let error = JobError::new(ErrorClass::ServerError, "503");
        let decided = Decided::of(&job, attempt(Err(error)), 0.5, LIMIT);
        assert!(
            matches!(&decided.decision, Decision::Dead { error } if error.message.contains("gave up after 3 attempts"))
        );
        assert_eq!(
            Fate::Decided(decided).message_end(),
            MessageEnd::DeadLettered
        );
    }

    #[test]
    fn a_wait_past_the_queue_limit_is_held_and_its_message_acked() {
        let job = claimed("a");
        let error = JobError::new(ErrorClass::RateLimited, "429").with_retry_after(Some(86_400));
        let decided = Decided::of(&job, attempt(Err(error)), 0.5, LIMIT);
        assert!(matches!(decided.decision, Decision::RetryLater { .. }));
        assert_eq!(
            Fate::Decided(decided).message_end(),
            MessageEnd::Settled(Verdict::Ack)
        );
    }

    #[test]
    fn a_released_job_comes_back_after_its_release_delay() {
        let fate = Fate::Released(Release {
            retry_secs: 7,
            reason: "browser_busy",
        });
        assert_eq!(
            fate.message_end(),
            MessageEnd::Settled(Verdict::Retry { delay_secs: 7 })
        );
    }

    #[test]
    fn an_unrecordable_success_is_decided_again_as_an_internal_error() {
        let job = claimed("a");
        let mut again = Decided::of(&job, attempt(Ok(None)), 0.5, LIMIT);
        again.fail_unrecorded(&job, "D1 refused the row".into(), 0.5, LIMIT);
        match &again.decision {
            Decision::Retry { error, .. } => {
                assert_eq!(error.class, ErrorClass::Internal);
                assert_eq!(error.message, "D1 refused the row");
            }
            other => panic!("expected a retry, got {other:?}"),
        }
        assert!(again.attempt.outcome.is_err());
    }
}
