//! The `callback` type: a job's or a chain's end, delivered once to the callback its job was
//! enqueued with (docs/app-guide.md "Callbacks"), signed like any delivery, under its own
//! retries. D1 writes these jobs (jobs_shared::job::callback); what the app answers is this
//! job's result, and never changes the job it reports on.

use jobs_shared::job::callback;
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use serde_json::Value;

use crate::job_context::{HandlerRun, JobContext};
use crate::signed_request::{self, Outgoing};

pub async fn run(ctx: &JobContext<'_>) -> HandlerRun {
    HandlerRun {
        follow_ups_trusted: false,
        ..HandlerRun::of(deliver(ctx).await)
    }
}

async fn deliver(ctx: &JobContext<'_>) -> Result<Option<Value>, JobError> {
    let payload = serde_json::from_str(&ctx.job.payload).unwrap_or_default();
    let (target, body) = callback::parts(payload).map_err(|e| {
        let message = format!("payload.{}: {}", e.field, e.message);
        JobError::new(ErrorClass::InvalidPayload, message)
    })?;
    let mut fetcher = None;
    let (via, url) =
        signed_request::locate(ctx.env, target.endpoint(), "the callback", &mut fetcher)?;
    let out = Outgoing::json_post(via, &url, &body, ctx.job_type.spec().timeout_ms);
    signed_request::send(ctx, out).await
}
