//! The `noop` type: does nothing and succeeds (benchmarks, tests of the pipeline itself), after
//! failing its first `fail_times` attempts, to exercise retries.

use jobs_shared::job::payloads::NoopPayload;
use jobs_shared::retry::error_class::{ErrorClass, JobError};

use crate::job_context::{self, HandlerRun, JobContext};

pub async fn run(ctx: &JobContext<'_>) -> HandlerRun {
    let outcome = job_context::payload::<NoopPayload>(ctx.job).and_then(|payload| {
        let fail_times = payload.fail_times.unwrap_or(0);
        if ctx.job.attempts <= fail_times {
            return Err(JobError::new(
                ErrorClass::ServerError,
                format!(
                    "noop: failing attempt {} of the first {fail_times}",
                    ctx.job.attempts
                ),
            ));
        }
        Ok(None)
    });
    HandlerRun::of(outcome)
}
