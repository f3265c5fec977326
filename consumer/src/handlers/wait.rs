//! The `wait` type: a workflow step that waits for an event the app posts (docs/app-guide.md
//! "Workflows"). It runs when the event came (`POST /v1/events` wrote it into its payload and
//! made it due) or at its timeout, and ends as `jobs_shared::job::workflow_wait::wait_end`
//! says: the event as its result, or past its timeout dead (`wait_timed_out`) or, continuing,
//! a result that says so.

use jobs_shared::job::workflow_wait::{wait_end, WaitPayload};
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use serde_json::Value;

use crate::job_context::{HandlerRun, JobContext};

pub async fn run(ctx: &JobContext<'_>) -> HandlerRun {
    let payload: Value = serde_json::from_str(&ctx.job.payload).unwrap_or_default();
    let outcome = match WaitPayload::parse(&payload) {
        Ok(wait) => wait_end(&wait)
            .map(Some)
            .map_err(|why| JobError::new(ErrorClass::WaitTimedOut, why)),
        Err(e) => Err(JobError::new(
            ErrorClass::InvalidPayload,
            format!("payload.{}: {}", e.field, e.message),
        )),
    };
    HandlerRun::of(outcome)
}
