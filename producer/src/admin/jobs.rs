//! The operator's views of jobs: the filtered list (search), one job with its runs, and the
//! recent failures.

use jobs_shared::api::job_filter::JobFilter;
use jobs_shared::api::page_cursor;
use jobs_shared::job::lifecycle::JobStatus;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::util::time_fmt::rfc3339;
use jobs_store::job_runs::{job_run_list_recent_failures, FailureRow};
use jobs_store::jobs::{job_list, ListedRow, Page, SummaryRow};
use serde_json::{json, Value};
use worker::{Env, Response};

use super::d1;
use crate::request::Request;
use crate::respond;

/// GET /v1/admin/jobs?status=&type=&family=&error_class=&created_after=...&cursor=&limit=
pub async fn list(req: &Request, env: &Env) -> Result<Response, ApiError> {
    let (rows, next_cursor) = page(req, env, None).await?;
    let jobs: Vec<Value> = rows.iter().map(listed).collect();
    respond::json(200, &json!({ "jobs": jobs, "next_cursor": next_cursor }))
}

/// A page of jobs from the request's filter and cursor; `only` narrows the statuses (the
/// dead-letter list passes `dead`, and gets each job's DLQ arrivals too).
pub async fn page(
    req: &Request,
    env: &Env,
    only: Option<&[JobStatus]>,
) -> Result<(Vec<ListedRow>, Option<String>), ApiError> {
    let pairs = d1::query(req)?;
    let filter = JobFilter::from_query(
        pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        &["cursor", "limit"],
    )?;
    let limit = page_cursor::limit(d1::param(&pairs, "limit"), 50, 200)?;
    let after = d1::param(&pairs, "cursor")
        .map(page_cursor::decode)
        .transpose()?
        .map(|(_, id)| id);
    let db = d1::database(env)?;
    let mut rows = job_list(
        &db,
        &Page {
            filter: &filter,
            only,
            after,
            limit,
        },
    )
    .await?;
    let next = super::page_end(&mut rows, limit, |row| page_cursor::encode(0, &row.job.id));
    Ok((rows, next))
}

/// GET /v1/admin/failures?limit=: the latest failed attempts with their errors.
pub async fn failures(req: &Request, env: &Env) -> Result<Response, ApiError> {
    let pairs = d1::only_params(req, &["limit"], true)?;
    let limit = page_cursor::limit(d1::param(&pairs, "limit"), 20, 200)?;
    let rows = job_run_list_recent_failures(&d1::database(env)?, limit).await?;
    let failures: Vec<Value> = rows.iter().map(failure).collect();
    respond::json(200, &json!({ "failures": failures }))
}

/// One job as the admin lists show it: its summary, with its DLQ arrivals on the dead-letter
/// list.
pub fn listed(row: &ListedRow) -> Value {
    let mut view = summary(&row.job);
    if let Some(arrivals) = row.dlq_arrivals {
        view["dlq"] = json!({
            "arrivals": arrivals,
            "last_arrived_at": row.dlq_last_arrived_at.map(rfc3339),
        });
    }
    view
}

/// One job as the admin actions answer it.
pub fn summary(row: &SummaryRow) -> Value {
    json!({
        "id": row.id,
        "type": row.job_type,
        "family": row.family,
        "status": row.status,
        "priority": row.priority,
        "attempts": row.attempts,
        "max_attempts": row.max_attempts,
        "runs": row.runs,
        "run_at": rfc3339(row.run_at),
        "created_at": rfc3339(row.created_at),
        "finished_at": row.finished_at.map(rfc3339),
        "error": row.error_class.as_ref().map(|class| json!({ "class": class, "message": row.last_error })),
        "held": row.held_at.is_some(),
        "enqueued_by": row.enqueued_by,
    })
}

fn failure(row: &FailureRow) -> Value {
    json!({
        "job_id": row.job_id,
        "type": row.job_type,
        "family": row.family,
        "status": row.status,
        "run": row.run,
        "attempt": row.attempt,
        "finished_at": rfc3339(row.finished_at),
        "outcome": row.outcome,
        "error": row.error_class.as_ref().map(|class| json!({ "class": class, "message": row.error_message })),
    })
}
