//! The job handlers: what runs for each type. Built-in types run here; the seed types without
//! one are forwarded to their app's endpoint.

mod ai_tagging;
pub(crate) mod fetch_timeout;
mod forward;
mod http;
mod link_health;
mod llm;
mod rss_refresh;
mod screenshot;
mod screenshot_browser;
mod screenshot_rest;
mod signed_request;

use jobs_shared::{ErrorClass, Handler, JobError, JobType};
use serde::de::DeserializeOwned;
use serde_json::Value;
use worker::Env;

use crate::outbound::Outbound;
use jobs_store::jobs::Claimed;

/// A handler's outcome (`Ok` carries the result JSON stored on the job), what the attempt
/// cost, in cents, recorded on its run (LLM calls; 0 for most types), failed or not, and
/// whether follow-up jobs in its result may be enqueued: built-in handlers and the team's own
/// app endpoints are trusted, an `http` target only when its job allows it.
pub struct HandlerRun {
    pub outcome: Result<Option<Value>, JobError>,
    pub cost_cents: f64,
    pub follow_ups_trusted: bool,
}

impl HandlerRun {
    /// A trusted handler's outcome that cost nothing.
    pub fn of(outcome: Result<Option<Value>, JobError>) -> HandlerRun {
        HandlerRun {
            outcome,
            cost_cents: 0.0,
            follow_ups_trusted: true,
        }
    }
}

/// Runs one claimed job; `started_at` is the attempt's start (the time a handler reasons in).
/// Every subrequest goes through the batch's `outbound` gate.
pub async fn run(
    job: &Claimed,
    job_type: JobType,
    env: &Env,
    outbound: &Outbound<'_>,
    started_at: i64,
) -> HandlerRun {
    HandlerRun::of(match job_type.handler() {
        Handler::AiTagging => return ai_tagging::run(job, env, outbound, started_at).await,
        Handler::Http => return http::run(job, job_type, env, outbound).await,
        Handler::Noop => Ok(None),
        Handler::Forward => forward::run(job, job_type, env, outbound).await,
        Handler::RssRefresh => rss_refresh::run(job, env, outbound).await,
        Handler::LinkHealth => link_health::run(job, env, outbound).await,
        Handler::Screenshot => screenshot::run(job, env, outbound).await,
    })
}

/// The job's payload as its type's struct (checked at enqueue; this only fails on old rows).
fn payload<P: DeserializeOwned>(job: &Claimed) -> Result<P, JobError> {
    serde_json::from_str(&job.payload)
        .map_err(|e| JobError::new(ErrorClass::InvalidPayload, format!("payload: {e}")))
}

/// A request we could not even build is a fault in the job's own data: retrying cannot help.
fn invalid_request(e: worker::Error) -> JobError {
    JobError::new(
        ErrorClass::InvalidPayload,
        format!("cannot build the request: {e}"),
    )
}

/// D1 failing under a handler is the platform's fault, and usually passes: retried.
fn d1_error(e: worker::Error) -> JobError {
    JobError::new(ErrorClass::Internal, format!("D1: {e}"))
}
