//! What happens to a job after an attempt: the executor's decision, kept pure so
//! every branch is testable without a queue or a database.

use crate::retry::error_class::JobError;
use crate::retry::retry_policy::{plan_delivery, DeliveryPlan, QueueDelayLimit, RetryPolicy};

/// Each failing decision carries the attempt's error, so the decision alone says
/// what goes into the run record and what happens next.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Succeed,
    /// Retry through the queue with this delay.
    Retry {
        error: JobError,
        delay_secs: u32,
    },
    /// Retry later than a queue delay can reach: keep the job in D1 until `until_ms`.
    RetryLater {
        error: JobError,
        until_ms: i64,
    },
    Dead {
        error: JobError,
    },
    /// The attempt chose not to run its work (its error's class `skips()`): the job ends
    /// `skipped`, its reason in `error`, and no retry follows.
    Skip {
        error: JobError,
    },
}

/// One attempt's end, as [`decide`] reads it.
#[derive(Clone, Copy, Debug)]
pub struct AttemptEnd<'a> {
    /// How it ended: `Ok`, or its error.
    pub outcome: Result<(), &'a JobError>,
    /// Which attempt it was (1-indexed, counted against `max_attempts`).
    pub attempt: u32,
    pub max_attempts: u32,
    /// The job's own retry policy, else its type's.
    pub policy: &'a RetryPolicy,
    /// The jitter's randomness, in [0, 1).
    pub jitter: f64,
    /// When it ended: a retry's delay counts from here.
    pub now_ms: i64,
    /// The longest delay the queue takes: a wait beyond it is kept in D1 instead.
    pub limit: QueueDelayLimit,
}

/// Decides what follows an attempt's end.
///
/// A server's Retry-After wins over the policy's backoff: it knows when it will
/// take the request again. Both are capped (`MAX_RETRY_DELAY_SECS`).
pub fn decide(end: &AttemptEnd<'_>) -> Decision {
    let error = match end.outcome {
        Ok(()) => return Decision::Succeed,
        Err(error) => error,
    };
    if error.class.skips() {
        return Decision::Skip {
            error: error.clone(),
        };
    }
    if !error.class.retryable() {
        return Decision::Dead {
            error: error.clone(),
        };
    }
    let attempt = end.attempt;
    if attempt >= end.max_attempts {
        let attempts = if attempt == 1 { "attempt" } else { "attempts" };
        let message = format!("{} (gave up after {attempt} {attempts})", error.message);
        return Decision::Dead {
            error: JobError {
                message,
                ..error.clone()
            },
        };
    }
    let delay = error
        .retry_after_secs
        .unwrap_or_else(|| end.policy.delay_secs(attempt, end.jitter));
    let error = error.clone();
    match plan_delivery(delay, end.now_ms, end.limit) {
        DeliveryPlan::Send { delay_secs } => Decision::Retry { error, delay_secs },
        DeliveryPlan::SendLater { until_ms } => Decision::RetryLater { error, until_ms },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::error_class::ErrorClass;
    use crate::retry::retry_policy::MAX_RETRY_DELAY_SECS;
    use proptest::prelude::*;

    const NOW: i64 = 1_700_000_000_000;
    const LIMIT: QueueDelayLimit = QueueDelayLimit::DEFAULT;

    /// `decide` at `NOW` with the jitter's midpoint.
    fn decide_now(
        outcome: &Result<(), JobError>,
        attempt: u32,
        max_attempts: u32,
        policy: RetryPolicy,
        limit: QueueDelayLimit,
    ) -> Decision {
        decide(&AttemptEnd {
            outcome: outcome.as_ref().map(|_| ()),
            attempt,
            max_attempts,
            policy: &policy,
            jitter: 0.5,
            now_ms: NOW,
            limit,
        })
    }

    fn fail(class: ErrorClass) -> Result<(), JobError> {
        Err(JobError::new(class, "boom"))
    }

    #[test]
    fn success_succeeds() {
        let d = decide_now(&Ok(()), 5, 5, RetryPolicy::DEFAULT, LIMIT);
        assert_eq!(d, Decision::Succeed);
    }

    #[test]
    fn non_retryable_errors_die_at_once() {
        let outcome = fail(ErrorClass::ClientError);
        let d = decide_now(&outcome, 1, 5, RetryPolicy::DEFAULT, LIMIT);
        assert_eq!(
            d,
            Decision::Dead {
                error: JobError::new(ErrorClass::ClientError, "boom")
            }
        );
    }

    #[test]
    fn a_skipping_class_skips_whatever_attempts_are_left() {
        let error = JobError::new(ErrorClass::BudgetHardStop, "budget spent");
        for attempt in [1, 5] {
            let d = decide_now(&Err(error.clone()), attempt, 5, RetryPolicy::DEFAULT, LIMIT);
            assert_eq!(
                d,
                Decision::Skip {
                    error: error.clone()
                }
            );
        }
    }

    #[test]
    fn retryable_errors_back_off_by_policy() {
        let outcome = fail(ErrorClass::ServerError);
        let error = JobError::new(ErrorClass::ServerError, "boom");
        let d = decide_now(&outcome, 1, 5, RetryPolicy::DEFAULT, LIMIT);
        assert_eq!(
            d,
            Decision::Retry {
                error: error.clone(),
                delay_secs: 30
            }
        );
        let d = decide_now(&outcome, 3, 4, RetryPolicy::FIXED_TABLE, LIMIT);
        assert_eq!(
            d,
            Decision::Retry {
                error,
                delay_secs: 600
            }
        );
    }

    #[test]
    fn exhausted_attempts_die_keeping_the_class() {
        let outcome = fail(ErrorClass::Timeout);
        let d = decide_now(&outcome, 5, 5, RetryPolicy::DEFAULT, LIMIT);
        assert_eq!(
            d,
            Decision::Dead {
                error: JobError::new(ErrorClass::Timeout, "boom (gave up after 5 attempts)")
            }
        );
        let d = decide_now(&outcome, 1, 1, RetryPolicy::DEFAULT, LIMIT);
        let Decision::Dead { error } = d else {
            panic!("{d:?}")
        };
        assert_eq!(error.message, "boom (gave up after 1 attempt)");
    }

    #[test]
    fn retry_after_overrides_the_backoff() {
        let error = JobError::new(ErrorClass::RateLimited, "HTTP 429").with_retry_after(Some(7));
        let d = decide_now(&Err(error.clone()), 1, 5, RetryPolicy::DEFAULT, LIMIT);
        assert_eq!(
            d,
            Decision::Retry {
                error,
                delay_secs: 7
            }
        );
    }

    #[test]
    fn waits_beyond_the_queue_limit_are_held() {
        let error =
            JobError::new(ErrorClass::RateLimited, "HTTP 429").with_retry_after(Some(86_400));
        let d = decide_now(&Err(error.clone()), 1, 5, RetryPolicy::DEFAULT, LIMIT);
        let until_ms = NOW + 86_400_000;
        assert_eq!(d, Decision::RetryLater { error, until_ms });
        // The crawler policy at attempt 12 is 24 h +- 20 %: always past the 12 h queue limit.
        let outcome = fail(ErrorClass::Network);
        let d = decide_now(&outcome, 12, 20, RetryPolicy::CRAWLER, LIMIT);
        let error = JobError::new(ErrorClass::Network, "boom");
        assert_eq!(d, Decision::RetryLater { error, until_ms });
    }

    #[test]
    fn no_wait_outlasts_the_retry_cap() {
        let cap_ms = MAX_RETRY_DELAY_SECS as i64 * 1000;
        let hostile =
            JobError::new(ErrorClass::ServerError, "HTTP 503").with_retry_after(Some(999_999_999));
        let d = decide_now(&Err(hostile.clone()), 1, 5, RetryPolicy::DEFAULT, LIMIT);
        let until_ms = NOW + cap_ms;
        assert_eq!(
            d,
            Decision::RetryLater {
                error: hostile,
                until_ms
            }
        );
        // The default policy at attempt 20 would be 30 s x 2^19 (182 days).
        let d = decide_now(
            &fail(ErrorClass::Timeout),
            20,
            100,
            RetryPolicy::DEFAULT,
            LIMIT,
        );
        let error = JobError::new(ErrorClass::Timeout, "boom");
        assert_eq!(d, Decision::RetryLater { error, until_ms });
    }

    #[test]
    fn the_configured_queue_limit_decides_retry_or_retry_later() {
        let (minute, _) = QueueDelayLimit::from_vars(|_| Some("60".into()));
        let error =
            |secs| JobError::new(ErrorClass::ServerError, "HTTP 503").with_retry_after(Some(secs));
        let run = |secs, limit| decide_now(&Err(error(secs)), 1, 5, RetryPolicy::DEFAULT, limit);
        let (error_60, error_120) = (error(60), error(120));
        assert_eq!(
            run(60, minute),
            Decision::Retry {
                error: error_60,
                delay_secs: 60
            }
        );
        let until_ms = NOW + 120_000;
        assert_eq!(
            run(120, minute),
            Decision::RetryLater {
                error: error_120.clone(),
                until_ms
            }
        );
        assert_eq!(
            run(120, LIMIT),
            Decision::Retry {
                error: error_120,
                delay_secs: 120
            }
        );
    }

    fn class() -> impl Strategy<Value = ErrorClass> {
        proptest::sample::select(vec![
            ErrorClass::Timeout,
            ErrorClass::RateLimited,
            ErrorClass::ServerError,
            ErrorClass::ClientError,
            ErrorClass::Network,
            ErrorClass::NotConfigured,
            ErrorClass::InvalidPayload,
            ErrorClass::Internal,
            ErrorClass::DeliveryExhausted,
            ErrorClass::BudgetHardStop,
        ])
    }

    proptest! {
        #[test]
        fn never_retries_past_max_attempts(
            class in class(),
            retry_after in proptest::option::of(any::<u64>()),
            attempt in 1u32..120,
            max_attempts in 1u32..=100,
            unit in 0.0f64..1.0,
        ) {
            let error = JobError::new(class, "x").with_retry_after(retry_after);
            let d = decide(&AttemptEnd {
                outcome: Err(&error),
                attempt,
                max_attempts,
                policy: &RetryPolicy::DEFAULT,
                jitter: unit,
                now_ms: NOW,
                limit: LIMIT,
            });
            let retried = matches!(d, Decision::Retry { .. } | Decision::RetryLater { .. });
            if let Decision::RetryLater { until_ms, .. } = d {
                prop_assert!(until_ms <= NOW + MAX_RETRY_DELAY_SECS as i64 * 1000);
            }
            prop_assert_eq!(retried, class.retryable() && attempt < max_attempts);
            match d {
                Decision::Retry { error, .. } | Decision::RetryLater { error, .. } | Decision::Dead { error } => {
                    prop_assert!(!class.skips());
                    prop_assert_eq!(error.class, class);
                }
                Decision::Skip { error } => prop_assert!(error.class.skips() && error.class == class),
                Decision::Succeed => prop_assert!(false, "a failure never succeeds"),
            }
        }
    }
}
