//! Job types with no built-in handler are delivered to the app that owns them: a signed POST of
//! {id, type, attempt, payload} (`attempt` as in `X-Jobs-Attempt`; a workflow step's `inputs`
//! too, when it takes any) to the type's endpoint: the
//! URL its definition names, the URL in the consumer's var it names (the bundled catalog's
//! `ENDPOINT_<TYPE>`), or the Worker behind the consumer's service binding it names
//! (docs/app-guide.md "Your own job types"). The app's answer is the job's outcome, classified
//! like any HTTP delivery.

use jobs_shared::job::registry::Handler;
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use serde_json::{json, Value};

use crate::budget_gate;
use crate::job_context::{self, HandlerRun, JobContext};
use crate::signed_request::{self, Outgoing};

pub async fn run(ctx: &JobContext<'_>) -> HandlerRun {
    match ctx.job_type.budget() {
        Some(spec) => budget_gate::run_within(ctx, spec, forward(ctx)).await,
        None => HandlerRun::of(forward(ctx).await),
    }
}

async fn forward(ctx: &JobContext<'_>) -> Result<Option<Value>, JobError> {
    let (job, job_type) = (ctx.job, ctx.job_type);
    let Handler::Forward(endpoint) = job_type.handler() else {
        return Err(JobError::new(ErrorClass::Internal, "not a forwarded type"));
    };
    let mut fetcher = None;
    let (via, url) = signed_request::locate(ctx.env, endpoint, job_type.as_str(), &mut fetcher)?;
    let payload: Value = serde_json::from_str(&job.payload).unwrap_or(Value::Null);
    let mut body = json!({ "id": job.id, "type": job_type.as_str(), "attempt": job.delivery_attempt(), "payload": payload });
    if let Some(inputs) = job_context::inputs(job) {
        body["inputs"] = inputs;
    }
    let out = Outgoing::json_post(via, &url, &body, job_type.spec().timeout_ms);
    signed_request::send(ctx, out).await
}
