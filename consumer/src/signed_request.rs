//! Signed HTTP delivery, shared by the `http` type, forwarding and callbacks, and where a
//! delivery's target is reached ([`locate`]): X-Jobs-Signature binds the
//! body to its method, URL, job and attempt (jobs_shared::security::signature, docs/app-guide.md
//! "Signed delivery"), with the first of SIGNING_SECRETS (else SIGNING_SECRET); a timeout; the
//! response classified (2xx success; 408/429/5xx/network/timeout retryable with Retry-After; other
//! 4xx final; a redirect is not followed and is final: docs/app-guide.md "Signed delivery").
//! Each request carries the job's correlation id (`X-Request-Id`, and a W3C `traceparent` in
//! the job's trace when the id is a trace id), so the app's logs join the job's. Only these
//! requests to the team's own endpoints carry it: feeds and checked links are third parties.

use jobs_shared::handlers::link_health::is_redirect;
use jobs_shared::job::chain::BODY_TRUNCATED_KEY;
use jobs_shared::job::stored_result::MAX_RESPONSE_BYTES;
use jobs_shared::job::target::Endpoint;
use jobs_shared::observe::correlation;
use jobs_shared::retry::error_class::{delivery_redirected, ErrorClass, JobError};
use jobs_shared::runtime::clock::now_ms;
use jobs_shared::runtime::vars;
use jobs_shared::security::signature::{sign, signing_secret, SignedRequest, SIGNATURE_HEADER};
use serde_json::{json, Value};
use worker::{Env, Fetcher, Headers, Method, Request, RequestInit, RequestRedirect};

use crate::job_context::{invalid_request, JobContext};
use crate::outbound::fetch_timeout::{self, Via};
use crate::web_url;

pub struct Outgoing<'a> {
    /// Out to the internet, or to the Worker behind a service binding (at `url` all the same:
    /// it is what the app sees and what is signed).
    pub via: Via<'a>,
    pub url: &'a str,
    pub method: Method,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    pub content_type: Option<&'static str>,
    pub timeout_ms: u32,
}

impl<'a> Outgoing<'a> {
    /// A POST of JSON `body` (a forwarded job, a callback) by way of `via` to `url`.
    pub fn json_post(via: Via<'a>, url: &'a str, body: &Value, timeout_ms: u32) -> Outgoing<'a> {
        Outgoing {
            via,
            url,
            method: Method::Post,
            headers: Vec::new(),
            body: Some(body.to_string()),
            content_type: Some("application/json"),
            timeout_ms,
        }
    }
}

/// Where `endpoint` is, for a delivery of `what` (named in errors: a job type, a callback): its
/// URL and how it is reached. A service binding's `Fetcher` is kept in `fetcher`, which the
/// returned `Via` borrows.
pub fn locate<'f>(
    env: &Env,
    endpoint: Endpoint<'_>,
    what: &str,
    fetcher: &'f mut Option<Fetcher>,
) -> Result<(Via<'f>, String), JobError> {
    let not_configured = |what: String| JobError::new(ErrorClass::NotConfigured, what);
    match endpoint {
        Endpoint::Url(url) => Ok((Via::Internet, url.to_string())),
        Endpoint::Service { binding, path } => {
            let service = env.service(binding).map_err(|_| {
                not_configured(format!(
                    "the consumer has no service binding {binding} for {what}: add it to consumer/wrangler.toml [[services]]"
                ))
            })?;
            let url = format!("https://{}{path}", binding.to_ascii_lowercase());
            Ok((Via::Service(fetcher.insert(service)), url))
        }
        Endpoint::Var(key) => {
            let url = vars::string(env, key).ok_or_else(|| {
                not_configured(format!("no endpoint configured for {what}: set {key}"))
            })?;
            Ok((Via::Internet, url))
        }
    }
}

/// Sends `out` for the job in `ctx`, signed as that job's attempt.
pub async fn send(ctx: &JobContext<'_>, out: Outgoing<'_>) -> Result<Option<Value>, JobError> {
    let (job, job_type, env, outbound) = (ctx.job, ctx.job_type, ctx.env, ctx.outbound);
    let (secrets, single) = (
        vars::string(env, "SIGNING_SECRETS"),
        vars::string(env, "SIGNING_SECRET"),
    );
    let secret = signing_secret(secrets.as_deref(), single.as_deref()).ok_or_else(|| {
        JobError::new(
            ErrorClass::NotConfigured,
            "neither SIGNING_SECRETS nor SIGNING_SECRET is set: deliveries are never sent unsigned",
        )
    })?;
    // Signed as the app receives it: WHATWG-serialized, and fetch never sends a fragment.
    let url = web_url::parse(out.url).map_err(|e| JobError::new(ErrorClass::InvalidPayload, e))?;
    url.set_hash("");
    let url = url.href();
    let body = match out.method {
        Method::Get | Method::Head => String::new(),
        _ => out.body.unwrap_or_default(),
    };
    let headers = Headers::new();
    for (name, value) in &out.headers {
        headers.set(name, value).map_err(invalid_request)?;
    }
    if let Some(content_type) = out.content_type {
        headers
            .set("content-type", content_type)
            .map_err(invalid_request)?;
    }
    let signed = SignedRequest {
        method: out.method.as_ref(),
        url: &url,
        job_type: job_type.as_str(),
        job_id: &job.id,
        attempt: job.delivery_attempt(),
        body: body.as_bytes(),
    };
    let signature = sign(secret.as_bytes(), now_ms() / 1000, &signed);
    headers
        .set(SIGNATURE_HEADER, &signature)
        .map_err(invalid_request)?;
    headers.set("x-jobs-id", &job.id).map_err(invalid_request)?;
    headers
        .set("x-jobs-type", job_type.as_str())
        .map_err(invalid_request)?;
    headers
        .set("x-jobs-attempt", &job.delivery_attempt().to_string())
        .map_err(invalid_request)?;
    let cid = job.correlation();
    headers.set("x-request-id", cid).map_err(invalid_request)?;
    let mut span = [0u8; 8];
    // Only the span id is random; without randomness the header is simply left out.
    if getrandom::getrandom(&mut span).is_ok() {
        if let Some(traceparent) = correlation::outgoing_traceparent(cid, span) {
            headers
                .set("traceparent", &traceparent)
                .map_err(invalid_request)?;
        }
    }

    let body_bytes = body.len();
    let mut init = RequestInit::new();
    init.with_method(out.method.clone())
        .with_headers(headers)
        .with_redirect(RequestRedirect::Manual);
    if !body.is_empty() {
        init.with_body(Some(body.into()));
    }
    let request = Request::new_with_init(&url, &init).map_err(invalid_request)?;

    let response =
        fetch_timeout::fetch_via(outbound, out.via, request, body_bytes, out.timeout_ms).await?;
    let status = response.status_code();
    if is_redirect(status) {
        let location = response.headers().get("location").ok().flatten();
        return Err(delivery_redirected(status, location.as_deref()));
    }
    fetch_timeout::check_status(&response)?;
    // The body shares the request's timeout, and only its first MAX_RESPONSE_BYTES are read.
    let read = response.body_capped(MAX_RESPONSE_BYTES).await?;
    if read.truncated {
        return Ok(Some(json!({
            "status": status,
            "body": read.text,
            BODY_TRUNCATED_KEY: true,
        })));
    }
    let body = serde_json::from_str::<Value>(&read.text).unwrap_or(Value::String(read.text));
    Ok(Some(json!({ "status": status, "body": body })))
}
