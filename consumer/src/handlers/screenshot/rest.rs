//! A screenshot through the account's Browser Rendering REST endpoint
//! (`POST {CF_API_BASE_URL}/accounts/{CF_ACCOUNT_ID}/browser-rendering/screenshot`, bearer
//! `CF_API_TOKEN`): the answer's body is the image. The endpoint does not report the target's
//! own HTTP status, so failures are classified by the endpoint's status alone.

use jobs_shared::handlers::screenshot::Capture;
use jobs_shared::job::stored_result::MAX_RESPONSE_BYTES;
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use serde_json::Value;
use worker::{Env, Headers, Method, Request, RequestInit};

use crate::job_context::invalid_request;
use crate::outbound::fetch_timeout;
use crate::outbound::Outbound;
use jobs_shared::runtime::vars;

const DEFAULT_API_BASE_URL: &str = "https://api.cloudflare.com/client/v4";

/// The endpoint's own setup and capture on top of the page budget.
const OVERHEAD_MS: u32 = 30_000;

pub async fn capture(
    capture: &Capture,
    env: &Env,
    outbound: &Outbound<'_>,
) -> Result<Vec<u8>, JobError> {
    let setting = |name: &str| {
        vars::string(env, name).ok_or_else(|| {
            JobError::new(
                ErrorClass::NotConfigured,
                format!("SCREENSHOT_MODE=rest needs {name}"),
            )
        })
    };
    let (account, token) = (setting("CF_ACCOUNT_ID")?, setting("CF_API_TOKEN")?);
    let base = vars::string(env, "CF_API_BASE_URL").unwrap_or_else(|| DEFAULT_API_BASE_URL.into());
    // cacheTTL=0: a job asks for the page as it is now, not the endpoint's 5 s cache.
    let url = format!(
        "{}/accounts/{account}/browser-rendering/screenshot?cacheTTL=0",
        base.trim_end_matches('/')
    );
    let headers = Headers::new();
    headers
        .set("authorization", &format!("Bearer {token}"))
        .map_err(invalid_request)?;
    headers
        .set("content-type", "application/json")
        .map_err(invalid_request)?;
    let body = capture.rest_body().to_string();
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(body.as_str().into()));
    let request = Request::new_with_init(&url, &init).map_err(invalid_request)?;

    let timeout = capture.timeout_ms.saturating_add(OVERHEAD_MS);
    let mut response = fetch_timeout::fetch(outbound, request, body.len(), timeout).await?;
    if let Err(e) = fetch_timeout::check_status(&response) {
        // An error's body, like any answer, is read only to the cap; its message is bounded.
        let body = response.body_capped(MAX_RESPONSE_BYTES).await;
        let detail = api_errors(&body.map(|b| b.text).unwrap_or_default());
        return Err(e.reworded(|m| format!("browser rendering API: {m}{detail}")));
    }
    response
        .bytes()
        .await
        .map_err(|e| JobError::new(ErrorClass::Network, format!("reading the screenshot: {e}")))
}

/// The API's `{"errors": [{"message"}]}` as ": a; b", or nothing.
fn api_errors(body: &str) -> String {
    let parsed: Value = serde_json::from_str(body).unwrap_or_default();
    let messages: Vec<&str> = parsed["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["message"].as_str())
        .collect();
    match messages.is_empty() {
        true => String::new(),
        false => format!(": {}", messages.join("; ")),
    }
}
