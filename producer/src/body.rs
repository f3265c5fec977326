//! Reading a JSON request body: content type, size and syntax are checked before any handler
//! sees it, so a bad request can never reach D1.

use futures::StreamExt;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::util::body_cap::CappedBody;
use serde_json::Value;

use crate::request::Request;

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
    let bytes = match declared {
        Some(n) if n > MAX_BODY_BYTES => return Err(too_large()),
        declared => read_capped(req, declared.is_some()).await?,
    };
    parsed(&bytes)
}

/// The body's bytes as JSON, or a 400 saying why not.
fn parsed(bytes: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::new(
            400,
            "malformed_json",
            format!("the body is not valid JSON: {e}"),
        )
    })
}

/// For a route that takes no body (one job's retry, cancel or replay): none, or `{}`, passes;
/// anything else is a 422 naming its first field, so an option the route lacks (`dry_run`) is
/// never silently dropped while the action runs for real.
pub async fn none(req: &mut Request) -> Result<(), ApiError> {
    let bytes = read_capped(req, false).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let field = match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(fields)) => match fields.keys().next() {
            None => return Ok(()),
            Some(key) => key.clone(),
        },
        _ => "body".into(),
    };
    let message = "this route takes no body; a dry run is the bulk route's \
                   ({\"ids\": [...], \"dry_run\": true})";
    Err(ApiError::new(422, "unknown_field", message).with_field(&field))
}

/// For a route whose body is optional: none (or whitespace) is `{}`; else a JSON object of
/// `allowed` fields only, or a 400/422 naming what is wrong. Unlike [`json`], no content type is
/// required of an empty body.
pub async fn object_or_none(req: &mut Request, allowed: &[&str]) -> Result<Value, ApiError> {
    let bytes = read_capped(req, false).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Default::default()));
    }
    let body = parsed(&bytes)?;
    jobs_shared::request::field_error::only_fields(&body, allowed)?;
    Ok(body)
}

/// Reads the body into one cap. `whole`: a Content-Length within the cap holds it to that
/// length (HTTP framing), so it is read in one call; a body without one (chunked) is read chunk
/// by chunk and refused as soon as it passes the cap, never buffered whole.
async fn read_capped(req: &mut Request, whole: bool) -> Result<Vec<u8>, ApiError> {
    let mut body = CappedBody::new(MAX_BODY_BYTES);
    if whole {
        let bytes = req.bytes().await.map_err(unreadable)?;
        body.push(&bytes).map_err(|_| too_large())?;
        return Ok(body.into_bytes());
    }
    // A request without a body has no stream.
    let Some(mut stream) = req.stream() else {
        return Ok(Vec::new());
    };
    while let Some(chunk) = stream.next().await {
        body.push(&chunk.map_err(unreadable)?)
            .map_err(|_| too_large())?;
    }
    Ok(body.into_bytes())
}

fn unreadable(e: worker::Error) -> ApiError {
    ApiError::new(400, "invalid_body", format!("could not read the body: {e}"))
}

fn too_large() -> ApiError {
    ApiError::new(
        413,
        "body_too_large",
        format!("the request body is over {MAX_BODY_BYTES} bytes"),
    )
}
