//! The `http` type: deliver the request the payload describes, signed.

use jobs_shared::{HttpPayload, JobType};
use serde_json::Value;
use worker::{Env, Method};

use super::signed_request::{self, Outgoing};
use super::HandlerRun;
use crate::outbound::Outbound;
use jobs_store::jobs::Claimed;

pub async fn run(
    job: &Claimed,
    job_type: JobType,
    env: &Env,
    outbound: &Outbound<'_>,
) -> HandlerRun {
    let payload: HttpPayload = match super::payload(job) {
        Ok(payload) => payload,
        Err(e) => return HandlerRun::of(Err(e)),
    };
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
    HandlerRun {
        outcome: signed_request::send(outbound, out, job, job_type, env).await,
        cost_cents: 0.0,
        follow_ups_trusted: payload.allow_follow_ups,
    }
}
