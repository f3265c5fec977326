//! Job types with no built-in handler are delivered to the app that owns them: a signed POST of
//! {id, type, attempt, payload} (`attempt` as in `X-Jobs-Attempt`) to the type's endpoint: the
//! URL its definition names, the URL in the consumer's var it names (the bundled catalog's
//! `ENDPOINT_<TYPE>`), or the Worker behind the consumer's service binding it names
//! (docs/app-guide.md "Your own job types"). The app's answer is the job's outcome, classified
//! like any HTTP delivery.

use jobs_shared::job::registry::{Endpoint, Handler};
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use jobs_shared::runtime::vars;
use serde_json::{json, Value};
use worker::{Fetcher, Method};

use crate::budget_gate;
use crate::job_context::{HandlerRun, JobContext};
use crate::outbound::fetch_timeout::Via;
use crate::signed_request::{self, Outgoing};

pub async fn run(ctx: &JobContext<'_>) -> HandlerRun {
    match ctx.job_type.budget() {
        Some(spec) => budget_gate::run_within(ctx, spec, forward(ctx)).await,
        None => HandlerRun::of(forward(ctx).await),
    }
}

async fn forward(ctx: &JobContext<'_>) -> Result<Option<Value>, JobError> {
    let (job, job_type, env) = (ctx.job, ctx.job_type, ctx.env);
    let not_configured = |what: String| JobError::new(ErrorClass::NotConfigured, what);
    let fetcher: Fetcher;
    let Handler::Forward(endpoint) = job_type.handler() else {
        return Err(JobError::new(ErrorClass::Internal, "not a forwarded type"));
    };
    let (via, url) = match endpoint {
        Endpoint::Url(url) => (Via::Internet, url.to_string()),
        Endpoint::Service { binding, path } => {
            fetcher = env.service(binding).map_err(|_| {
                not_configured(format!(
                    "the consumer has no service binding {binding} for {}: add it to consumer/wrangler.toml [[services]]",
                    job_type.as_str()
                ))
            })?;
            let url = format!("https://{}{path}", binding.to_ascii_lowercase());
            (Via::Service(&fetcher), url)
        }
        Endpoint::Var(key) => {
            let url = vars::string(env, key).ok_or_else(|| {
                not_configured(format!("no endpoint configured for {}: set {key}", job_type.as_str()))
            })?;
            (Via::Internet, url)
        }
    };
    let payload: Value = serde_json::from_str(&job.payload).unwrap_or(Value::Null);
    let body = json!({ "id": job.id, "type": job_type.as_str(), "attempt": job.delivery_attempt(), "payload": payload });
    let out = Outgoing {
        via,
        url: &url,
        method: Method::Post,
        headers: Vec::new(),
        body: Some(body.to_string()),
        content_type: Some("application/json"),
        timeout_ms: job_type.spec().timeout_ms,
    };
    signed_request::send(ctx, out).await
}
