//! Job types with no built-in handler are delivered to the app that owns them: a signed
//! POST of {id, type, attempt, payload} to the URL in ENDPOINT_<TYPE> (`attempt` as in
//! `X-Jobs-Attempt`). The app's answer is the job's outcome, classified like any HTTP delivery.

use jobs_shared::retry::error_class::{ErrorClass, JobError};
use jobs_shared::runtime::vars;
use serde_json::{json, Value};
use worker::Method;

use crate::job_context::{HandlerRun, JobContext};
use crate::signed_request::{self, Outgoing};

pub async fn run(ctx: &JobContext<'_>) -> HandlerRun {
    HandlerRun::of(forward(ctx).await)
}

async fn forward(ctx: &JobContext<'_>) -> Result<Option<Value>, JobError> {
    let (job, job_type, env) = (ctx.job, ctx.job_type, ctx.env);
    let key = job_type.env_key();
    let url = vars::string(env, &key).ok_or_else(|| {
        JobError::new(
            ErrorClass::NotConfigured,
            format!(
                "no endpoint configured for {}: set {key}",
                job_type.as_str()
            ),
        )
    })?;
    let payload: Value = serde_json::from_str(&job.payload).unwrap_or(Value::Null);
    let body = json!({ "id": job.id, "type": job_type.as_str(), "attempt": job.delivery_attempt(), "payload": payload });
    let out = Outgoing {
        url: &url,
        method: Method::Post,
        headers: Vec::new(),
        body: Some(body.to_string()),
        content_type: Some("application/json"),
        timeout_ms: job_type.spec().timeout_ms,
    };
    signed_request::send(ctx, out).await
}
