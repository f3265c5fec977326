//! GET /v1/jobs/{id}/artifacts/{run}/{kind}: the body of what one attempt produced
//! (docs/app-guide.md "Run records and artifacts"), so a web app gets its screenshot without an R2
//! binding of its own. Only an artifact a run record of the job names is served: a stored one from
//! the bucket its key names (shared `artifact_bucket`), an inline one as kept.

use jobs_shared::job::run_details::artifact_bucket;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::runtime::faults;
use jobs_shared::security::auth::Caller;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use worker::js_sys::Promise;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{web_sys, Env, Response};

use crate::{job_view, respond};

/// An artifact is the job's own output, never a page of ours: no script runs in it, whatever a
/// crawled page or an LLM put in it.
const HEADERS: [(&str, &str); 2] = [
    ("content-security-policy", "default-src 'none'; sandbox"),
    // A key is never written twice (a retry writes its own), so a copy stays good.
    ("cache-control", "private, max-age=86400"),
];

/// The artifact a path names: `{id}`, `{run}` and `{kind}`, as written.
pub struct ArtifactPath<'a> {
    pub id: &'a str,
    pub run: &'a str,
    pub kind: &'a str,
}

/// GET /v1/jobs/{id}/artifacts/{run}/{kind}, for `caller`.
pub async fn get(env: &Env, caller: &Caller, path: ArtifactPath<'_>) -> Result<Response, ApiError> {
    let ArtifactPath { id, run, kind } = path;
    let run_number = (run.parse::<u32>().ok().filter(|&n| n > 0)).ok_or_else(|| {
        ApiError::new(422, "invalid_field", "run must be a run number: 1, 2, ...").with_field("run")
    })?;
    let artifacts = job_view::artifacts(env, id, caller).await?;
    let of_run: Vec<&Value> = (artifacts.iter())
        .filter(|a| a["run"] == run_number)
        .collect();
    let Some(artifact) = of_run.iter().find(|a| a["kind"] == kind) else {
        return Err(missing(id, run, kind, &artifacts, of_run.is_empty()));
    };
    let content_type = artifact["content_type"]
        .as_str()
        .unwrap_or("application/octet-stream");
    let mut headers = vec![("content-type", content_type)];
    headers.extend(HEADERS);
    match (artifact["key"].as_str(), &artifact["inline"]) {
        (Some(key), _) => stored(env, key, headers).await,
        (None, inline) => {
            if artifact["truncated"] == true {
                headers.push(("x-artifact-truncated", "true"));
            }
            let body = match inline {
                Value::String(text) => text.clone(),
                value => value.to_string(),
            };
            let response = Response::ok(body)?;
            respond::with_headers(response, &headers)
        }
    }
}

/// The object under `key`, streamed from its bucket as R2 answers it.
async fn stored(env: &Env, key: &str, headers: Vec<(&str, &str)>) -> Result<Response, ApiError> {
    let binding = artifact_bucket(key)
        .ok_or_else(|| faults::internal(&format!("no bucket keeps the artifact {key}")))?;
    let answer = JsFuture::from(r2_response(env, binding, key))
        .await
        .map_err(|e| faults::internal(&format!("R2 get {key} failed: {e:?}")))?;
    if answer.is_undefined() {
        return Err(ApiError::new(
            503,
            "not_configured",
            format!(
                "the producer has no {binding} bucket binding ([[r2_buckets]] in wrangler.toml)"
            ),
        ));
    }
    if answer.is_null() {
        return Err(ApiError::new(
            410,
            "gone",
            format!("the artifact's object {key} is gone: its bucket's lifecycle rule expired it"),
        ));
    }
    respond::with_headers(web_sys::Response::from(answer).into(), &headers)
}

#[wasm_bindgen(module = "/src/r2_object.js")]
extern "C" {
    /// A Response streaming the object, with its `content-length` and `etag`; null when R2 has
    /// none, undefined when `binding` is not bound.
    #[wasm_bindgen(js_name = r2Response)]
    fn r2_response(env: &Env, binding: &str, key: &str) -> Promise;
}

/// 404 for an artifact the job's runs do not name, saying which they do.
fn missing(id: &str, run: &str, kind: &str, artifacts: &[Value], no_run: bool) -> ApiError {
    let has: Vec<String> = (artifacts.iter())
        .map(|a| format!("{} of run {}", a["kind"].as_str().unwrap_or("?"), a["run"]))
        .collect();
    let has = if has.is_empty() {
        "none".to_string()
    } else {
        has.join(", ")
    };
    let message = format!("job {id} has no artifact {kind} of run {run} (it has: {has})");
    ApiError::new(404, "not_found", message).with_field(if no_run { "run" } else { "kind" })
}
