//! The job handlers: what runs for each type. Built-in types run here; the seed types without
//! one are forwarded to their app's endpoint.

mod forward;
mod http;
mod signed_request;

use jobs_shared::{Handler, JobError, JobType};
use serde_json::Value;
use worker::Env;

use crate::claim_store::Claimed;

/// Runs one claimed job; `Ok` carries the result JSON stored on the job.
pub async fn run(job: &Claimed, job_type: JobType, env: &Env) -> Result<Option<Value>, JobError> {
    match job_type.handler() {
        Handler::Noop => Ok(None),
        Handler::Http => http::run(job, job_type, env).await,
        Handler::Forward => forward::run(job, job_type, env).await,
    }
}
