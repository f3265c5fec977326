//! GET /v1/jobs/{id}: the job as the API shows it, with every attempt's run record.

use jobs_shared::api::operator_action::operator_actions;
use jobs_shared::job::lifecycle::JobStatus;
use jobs_shared::job::run_details::show_omitted;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::security::auth::Caller;
use jobs_shared::security::redaction::redact_credentials;
use jobs_shared::util::time_fmt::rfc3339;
use jobs_store::job_runs::{job_run_list, RunRow};
use jobs_store::jobs::{job_get_by_id, job_list_chain_steps, JobRow};
use serde_json::{json, Value};
use worker::{D1Database, Env, Response};

use crate::admin::d1;
use crate::{chain_view, respond};

/// GET /v1/jobs/{id}, for `caller` (a token fenced to some job types sees only jobs of those).
pub async fn get(env: &Env, id: &str, caller: &Caller) -> Result<Response, ApiError> {
    respond::json(200, &read(env, id, caller).await?.0)
}

/// GET /v1/admin/jobs/{id}: the same view, with the `actions` its status allows an operator
/// (shared `operator_actions`), so the dashboard offers only those.
pub async fn get_for_operator(env: &Env, id: &str, caller: &Caller) -> Result<Response, ApiError> {
    let (mut body, run_at) = read(env, id, caller).await?;
    let status = body["status"].as_str().and_then(JobStatus::parse);
    let due_later = run_at > crate::env_config::now_ms();
    let actions = status.map_or_else(Vec::new, |status| operator_actions(status, due_later));
    body["actions"] = json!(actions);
    respond::json(200, &body)
}

/// The artifacts of job `id`'s runs, as its view lists them (GET /v1/jobs/{id}/artifacts/...,
/// crate::artifact_download): the job and its runs only, not the rest of the view.
pub async fn artifacts(env: &Env, id: &str, caller: &Caller) -> Result<Vec<Value>, ApiError> {
    let db = d1::database(env)?;
    let (_, runs) = job_and_runs(&db, id, caller).await?;
    Ok(artifacts_of(&runs.iter().map(run_view).collect::<Vec<_>>()))
}

/// The job's view, and its `run_at` in ms. The job, its runs and its chain's steps are read
/// concurrently (one round trip of latency).
async fn read(env: &Env, id: &str, caller: &Caller) -> Result<(Value, i64), ApiError> {
    let db = d1::database(env)?;
    let (job_and_runs, steps) =
        futures::join!(job_and_runs(&db, id, caller), job_list_chain_steps(&db, id));
    let (job, runs) = job_and_runs?;
    let steps = steps?;
    let mut body = view(&job, &runs);
    if let Value::Object(fields) = &mut body {
        fields.extend(chain_view::fields(&job, &steps, caller));
    }
    Ok((body, job.run_at))
}

/// Job `id` and its runs' records, read concurrently; 404 when there is no such job, or none
/// `caller` may see (an enqueue token is not told another token's job exists, nor a fenced
/// one a job of another type).
async fn job_and_runs(
    db: &D1Database,
    id: &str,
    caller: &Caller,
) -> Result<(JobRow, Vec<RunRow>), ApiError> {
    let (job, runs) = futures::join!(job_get_by_id(db, id), job_run_list(db, id));
    let runs = runs?;
    match job? {
        Some(job) if caller.may_see(&job.job_type, job.enqueued_by.as_deref()) => Ok((job, runs)),
        _ => Err(no_such_job(id)),
    }
}

/// The 404 of a job that does not exist, or that the caller may not see or act on (it is not
/// told the job exists).
pub(crate) fn no_such_job(id: &str) -> ApiError {
    ApiError::new(404, "not_found", format!("no job {id}")).with_field("id")
}

/// Every run's artifacts, newest run first, each naming its run.
fn artifacts_of(runs: &[Value]) -> Vec<Value> {
    (runs.iter().rev())
        .flat_map(|run| {
            let artifacts = run["artifacts"].as_array().cloned().unwrap_or_default();
            artifacts.into_iter().map(move |mut a| {
                a["run"] = run["run"].clone();
                a
            })
        })
        .collect()
}

fn view(job: &JobRow, runs: &[RunRow]) -> Value {
    let runs: Vec<Value> = runs.iter().map(run_view).collect();
    let artifacts = artifacts_of(&runs);
    json!({
        "id": job.id,
        "type": job.job_type,
        "family": job.family,
        "status": job.status,
        "priority": job.priority,
        // Its credential headers went out with its request; they are not shown again.
        "payload": redact_credentials(parse_json(&job.payload)),
        "dedup_key": job.dedup_key,
        "attempts": job.attempts,
        "max_attempts": job.max_attempts,
        "run_at": rfc3339(job.run_at),
        "error": job.error_class.as_ref().map(|class| json!({ "class": class, "message": job.last_error })),
        "result": job.result.as_deref().map(parse_json),
        "created_at": rfc3339(job.created_at),
        "updated_at": rfc3339(job.updated_at),
        "started_at": job.started_at.map(rfc3339),
        "finished_at": job.finished_at.map(rfc3339),
        // A job written without one (a schedule's run) goes by its own id in its logs and
        // requests (docs/app-guide.md "Correlation ids").
        "correlation_id": job.correlation_id.as_deref().unwrap_or(&job.id),
        "enqueued_by": job.enqueued_by,
        "held": job.held_at.is_some(),
        "retry": job.retry_policy.as_deref().map(parse_json),
        "expires_at": job.expires_at.map(rfc3339),
        "runs": runs,
        "artifacts": artifacts,
        // Where its end goes, and how that delivery went (docs/app-guide.md "Callbacks").
        "callback": job.callback.as_deref().map(|target| json!({
            "target": parse_json(target),
            "delivery": job.callback_delivery.as_deref().map(parse_json),
        })),
    })
}

/// A run record, with its details (docs/app-guide.md "Run records and artifacts") as fields of
/// their own: what ran it, its bytes, LLM use and artifacts, the lease it held; a lost attempt's
/// say who found it. Runs recorded before details were kept have none of these.
fn run_view(run: &RunRow) -> Value {
    let mut view = json!({
        "run": run.run,
        "attempt": run.attempt,
        "started_at": rfc3339(run.started_at),
        "finished_at": rfc3339(run.finished_at),
        "outcome": run.outcome,
        "error": run.error_class.as_ref().map(|class| json!({ "class": class, "message": run.error_message })),
        "duration_ms": run.duration_ms,
        "cost_cents": run.cost_cents,
    });
    let details = run.details.as_deref().map(parse_json);
    if let (Value::Object(view), Some(Value::Object(mut details))) = (&mut view, details) {
        if let Some(lease) = details.get("lease_until").and_then(Value::as_i64) {
            details.insert("lease_until".into(), rfc3339(lease).into());
        }
        show_omitted(&mut details);
        view.extend(details);
    }
    view
}

/// Stored JSON was validated on the way in; should a row ever hold anything else, show it as text.
pub fn parse_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}
