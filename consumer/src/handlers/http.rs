//! The `http` type: deliver the request the payload describes, signed.

use jobs_shared::{HttpPayload, JobError, JobType};
use serde_json::Value;
use worker::{Env, Method};

use super::signed_request::{self, Outgoing};
use crate::claim_store::Claimed;

pub async fn run(job: &Claimed, job_type: JobType, env: &Env) -> Result<Option<Value>, JobError> {
    let payload: HttpPayload = super::payload(job)?;
    let method = Method::from(
        payload
            .method
            .as_deref()
            .unwrap_or("POST")
            .to_ascii_uppercase(),
    );
    let (body, content_type) = match payload.body {
        None | Some(Value::Null) => (None, None),
        Some(Value::String(text)) => (Some(text), None),
        Some(json) => (Some(json.to_string()), Some("application/json")),
    };
    let out = Outgoing {
        url: &payload.url,
        method,
        headers: payload.headers.unwrap_or_default().into_iter().collect(),
        body,
        content_type,
        timeout_ms: payload.timeout_ms.unwrap_or(job_type.spec().timeout_ms),
    };
    signed_request::send(out, job, job_type, env).await
}
