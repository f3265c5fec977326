//! Reading a JSON request body: content type, size and syntax are checked before any handler
//! sees it, so a bad request can never reach D1.

use futures::StreamExt;
use jobs_shared::{ApiError, CappedBody};
use serde_json::Value;
use worker::Request;

/// Whole request bodies are capped well above one job's 128 KiB payload limit but low enough
/// that a batch cannot exhaust the isolate's memory.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

pub async fn json(req: &mut Request) -> Result<Value, ApiError> {
    let content_type = req
        .headers()
        .get("content-type")
        .ok()
        .flatten()
        .unwrap_or_default();
    let media_type = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if media_type != "application/json" {
        return Err(ApiError::new(
            415,
            "unsupported_media_type",
            "the body must be JSON, sent with Content-Type: application/json",
        )
        .with_field("content-type"));
    }
    let declared = req
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
        return Err(too_large());
    }
    let bytes = read_capped(req).await?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(
            400,
            "malformed_json",
            format!("the body is not valid JSON: {e}"),
        )
    })
}

/// Reads the body chunk by chunk and stops at the cap: a chunked body (no Content-Length) or
/// one longer than it declared is refused as soon as it passes the cap, never buffered whole.
async fn read_capped(req: &mut Request) -> Result<Vec<u8>, ApiError> {
    let unreadable = |e: worker::Error| {
        ApiError::new(400, "invalid_body", format!("could not read the body: {e}"))
    };
    let mut body = CappedBody::new(MAX_BODY_BYTES);
    // A request without a body has no stream.
    let Ok(mut stream) = req.stream() else {
        return Ok(Vec::new());
    };
    while let Some(chunk) = stream.next().await {
        body.push(&chunk.map_err(unreadable)?)
            .map_err(|_| too_large())?;
    }
    Ok(body.into_bytes())
}

fn too_large() -> ApiError {
    ApiError::new(
        413,
        "body_too_large",
        format!("the request body is over {MAX_BODY_BYTES} bytes"),
    )
}
