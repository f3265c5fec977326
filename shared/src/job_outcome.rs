//! What happens to a job after an attempt: the executor's decision, kept pure so
//! every branch is testable without a queue or a database.

use crate::error_class::JobError;
use crate::retry_policy::{plan_delivery, Delivery, RetryPolicy};

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
    Hold {
        error: JobError,
        until_ms: i64,
    },
    Dead {
        error: JobError,
    },
}

/// Decides after attempt `attempt` (1-indexed) of `max_attempts` ended with `outcome`.
///
/// A server's Retry-After wins over the policy's backoff: it knows when it will
/// take the request again. `unit` in [0, 1) is the jitter's randomness.
pub fn decide(
    outcome: &Result<(), JobError>,
    attempt: u32,
    max_attempts: u32,
    policy: &RetryPolicy,
    unit: f64,
    now_ms: i64,
) -> Decision {
    let error = match outcome {
        Ok(()) => return Decision::Succeed,
        Err(error) => error,
    };
    if !error.class.retryable() {
        return Decision::Dead {
            error: error.clone(),
        };
    }
    if attempt >= max_attempts {
        let message = format!("{} (gave up after {attempt} attempts)", error.message);
        return Decision::Dead {
            error: JobError {
                message,
                ..error.clone()
            },
        };
    }
    let delay = error
        .retry_after_secs
        .unwrap_or_else(|| policy.delay_secs(attempt, unit));
    let error = error.clone();
    match plan_delivery(delay, now_ms) {
        Delivery::Send { delay_secs } => Decision::Retry { error, delay_secs },
        Delivery::Hold { until_ms } => Decision::Hold { error, until_ms },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error_class::ErrorClass;
    use proptest::prelude::*;

    const NOW: i64 = 1_700_000_000_000;

    fn fail(class: ErrorClass) -> Result<(), JobError> {
        Err(JobError::new(class, "boom"))
    }

    #[test]
    fn success_succeeds() {
        let d = decide(&Ok(()), 5, 5, &RetryPolicy::SEED_000, 0.5, NOW);
        assert_eq!(d, Decision::Succeed);
    }

    #[test]
    fn non_retryable_errors_die_at_once() {
        let outcome = fail(ErrorClass::ClientError);
        let d = decide(&outcome, 1, 5, &RetryPolicy::SEED_000, 0.5, NOW);
        assert_eq!(
            d,
            Decision::Dead {
                error: JobError::new(ErrorClass::ClientError, "boom")
            }
        );
    }

    #[test]
    fn retryable_errors_back_off_by_policy() {
        let outcome = fail(ErrorClass::ServerError);
        let error = JobError::new(ErrorClass::ServerError, "boom");
        let d = decide(&outcome, 1, 5, &RetryPolicy::SEED_000, 0.5, NOW);
        assert_eq!(
            d,
            Decision::Retry {
                error: error.clone(),
                delay_secs: 30
            }
        );
        let d = decide(&outcome, 3, 4, &RetryPolicy::SEED_004, 0.5, NOW);
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
        let d = decide(&outcome, 5, 5, &RetryPolicy::SEED_000, 0.5, NOW);
        assert_eq!(
            d,
            Decision::Dead {
                error: JobError::new(ErrorClass::Timeout, "boom (gave up after 5 attempts)")
            }
        );
    }

    #[test]
    fn retry_after_overrides_the_backoff() {
        let error = JobError::new(ErrorClass::RateLimited, "HTTP 429").with_retry_after(Some(7));
        let d = decide(&Err(error.clone()), 1, 5, &RetryPolicy::SEED_000, 0.5, NOW);
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
        let d = decide(&Err(error.clone()), 1, 5, &RetryPolicy::SEED_000, 0.5, NOW);
        let until_ms = NOW + 86_400_000;
        assert_eq!(d, Decision::Hold { error, until_ms });
        // Seed 002 at attempt 12 is 24 h +- 20 %: always past the 12 h queue limit.
        let outcome = fail(ErrorClass::Network);
        let d = decide(&outcome, 12, 20, &RetryPolicy::SEED_002, 0.5, NOW);
        let error = JobError::new(ErrorClass::Network, "boom");
        assert_eq!(d, Decision::Hold { error, until_ms });
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
        ])
    }

    proptest! {
        #[test]
        fn never_retries_past_max_attempts(
            class in class(),
            retry_after in proptest::option::of(0u64..200_000),
            attempt in 1u32..120,
            max_attempts in 1u32..=100,
            unit in 0.0f64..1.0,
        ) {
            let outcome = Err(JobError::new(class, "x").with_retry_after(retry_after));
            let d = decide(&outcome, attempt, max_attempts, &RetryPolicy::SEED_000, unit, NOW);
            let retried = matches!(d, Decision::Retry { .. } | Decision::Hold { .. });
            prop_assert_eq!(retried, class.retryable() && attempt < max_attempts);
            match d {
                Decision::Retry { error, .. } | Decision::Hold { error, .. } | Decision::Dead { error } => {
                    prop_assert_eq!(error.class, class);
                }
                Decision::Succeed => prop_assert!(false, "a failure never succeeds"),
            }
        }
    }
}
