//! The `http` type: deliver the request the payload describes, signed (a workflow step's
//! `inputs` in its JSON body).

use jobs_shared::job::payloads::HttpPayload;
use serde_json::Value;
use worker::Method;

use crate::job_context::{self, HandlerRun, JobContext};
use crate::outbound::fetch_timeout::Via;
use crate::signed_request::{self, Outgoing};

pub async fn run(ctx: &JobContext<'_>) -> HandlerRun {
    let payload: HttpPayload = match job_context::payload(ctx.job) {
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
    // A workflow step's inputs go in its JSON body (an object, or none: checked at enqueue).
    let body = match (job_context::inputs(ctx.job), payload.body) {
        (Some(inputs), None | Some(Value::Null)) => Some(serde_json::json!({ "inputs": inputs })),
        (Some(inputs), Some(Value::Object(mut object))) => {
            object.insert("inputs".into(), inputs);
            Some(Value::Object(object))
        }
        (_, body) => body,
    };
    let (body, content_type) = match body {
        None | Some(Value::Null) => (None, None),
        Some(Value::String(text)) => (Some(text), None),
        Some(json) => (Some(json.to_string()), Some("application/json")),
    };
    let out = Outgoing {
        via: Via::Internet,
        url: &payload.url,
        method,
        headers: payload.headers.unwrap_or_default().into_iter().collect(),
        body,
        content_type,
        timeout_ms: payload.timeout_ms.unwrap_or(ctx.job_type.spec().timeout_ms),
    };
    HandlerRun {
        follow_ups_trusted: payload.allow_follow_ups,
        ..HandlerRun::of(signed_request::send(ctx, out).await)
    }
}
