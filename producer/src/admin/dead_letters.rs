//! Dead letters: the jobs that went `dead` (each with its DLQ arrivals from `dead_letters`),
//! listed with filters, and replayed one, many or by filter (with a dry run). A replayed job
//! keeps its runs; its next attempt is a new run.

use jobs_shared::job::lifecycle::JobStatus;
use jobs_shared::request::api_error::ApiError;
use serde_json::{json, Value};
use worker::{Env, Response};

use super::job_actions::{self, Move};
use super::jobs::{listed, page};
use super::Admin;
use crate::request::Request;
use crate::respond;

/// GET /v1/admin/dead-letters?type=&family=&error_class=&finished_after=...&cursor=&limit=
pub async fn list(req: &Request, env: &Env) -> Result<Response, ApiError> {
    let (rows, next_cursor) = page(req, env, Some(&[JobStatus::Dead])).await?;
    let dead: Vec<Value> = rows.iter().map(listed).collect();
    respond::json(
        200,
        &json!({ "dead_letters": dead, "next_cursor": next_cursor }),
    )
}

/// POST /v1/admin/dead-letters/{id}/replay
pub async fn replay_one(
    admin: &Admin<'_>,
    req: &mut Request,
    id: &str,
) -> Result<Response, ApiError> {
    job_actions::move_one(admin, req, id, Move::replay("dead_letter.replay")).await
}

/// POST /v1/admin/dead-letters/replay `{"ids" | "filter", "dry_run"?}`
pub async fn replay(admin: &Admin<'_>, req: &mut Request) -> Result<Response, ApiError> {
    job_actions::bulk(admin, req, Move::replay("dead_letters.replay")).await
}
