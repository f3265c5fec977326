//! The operator's API under /v1/admin (admin scope; the router checks the token): stats, job
//! search and detail, job actions and bulk actions, dead letters, pauses and the audit log.
//! Every change is written together with its audit row.

mod audit;
pub(crate) mod d1;
mod dead_letters;
mod job_actions;
mod jobs;
mod pauses;
mod stats;

use jobs_shared::{actor_of, ApiError, JobStatus};
use jobs_store::audit::Entry;
use serde_json::Value;
use worker::{Env, Method, Request, Response};

use crate::{env_config, job_view};
use job_actions::Move;

/// The caller of an admin route: the Worker env and who they are (for the audit log).
pub struct Admin<'a> {
    pub env: &'a Env,
    pub actor: String,
}

impl<'a> Admin<'a> {
    /// The caller of `req`, known by its token (never the token itself: shared `actor_of`).
    pub fn of(req: &Request, env: &'a Env) -> Admin<'a> {
        let header = req.headers().get("authorization").ok().flatten();
        Admin {
            env,
            actor: actor_of(header.as_deref()),
        }
    }

    /// The audit entry of an action taken now.
    fn entry<'e>(&'e self, action: &'e str, target: Value) -> Entry<'e> {
        self.entry_at(action, target, env_config::now_ms())
    }

    /// The audit entry of an action taken at `now_ms` (the time its own writes record).
    pub fn entry_at<'e>(&'e self, action: &'e str, target: Value, now_ms: i64) -> Entry<'e> {
        Entry {
            actor: &self.actor,
            action,
            target,
            now_ms,
        }
    }
}

/// `rest` is the path after /v1/admin/.
pub async fn route(
    req: &mut Request,
    env: &Env,
    rest: &[&str],
    method: Method,
) -> Result<Response, ApiError> {
    let admin = &Admin::of(req, env);
    match (rest, method) {
        (["stats"], Method::Get) => stats::get(admin).await,
        (["jobs"], Method::Get) => jobs::list(req, env).await,
        (["jobs", "retry"], Method::Post) => {
            job_actions::bulk(req, admin, Move::to(JobStatus::Queued, "jobs.retry")).await
        }
        (["jobs", "cancel"], Method::Post) => {
            job_actions::bulk(req, admin, Move::to(JobStatus::Cancelled, "jobs.cancel")).await
        }
        (["jobs", id], Method::Get) => job_view::get(env, id).await,
        (["jobs", id, "status"], Method::Post) => job_actions::set_status(req, admin, id).await,
        (["jobs", id, "priority"], Method::Post) => job_actions::priority(req, admin, id).await,
        (["jobs", id, "boost"], Method::Post) => job_actions::boost(req, admin, id).await,
        (["jobs", id, "retry"], Method::Post) => {
            job_actions::move_one(admin, id, Move::to(JobStatus::Queued, "job.retry")).await
        }
        (["jobs", id, "cancel"], Method::Post) => {
            job_actions::move_one(admin, id, Move::to(JobStatus::Cancelled, "job.cancel")).await
        }
        (["failures"], Method::Get) => jobs::failures(req, env).await,
        (["dead-letters"], Method::Get) => dead_letters::list(req, env).await,
        (["dead-letters", "replay"], Method::Post) => dead_letters::replay(req, admin).await,
        (["dead-letters", id, "replay"], Method::Post) => dead_letters::replay_one(admin, id).await,
        (["pauses"], Method::Get) => pauses::list(admin).await,
        (["pauses"], Method::Post) => pauses::pause(req, admin).await,
        (["pauses", kind, name], Method::Delete) => pauses::resume(admin, kind, name).await,
        (["audit"], Method::Get) => audit::list(req, env).await,
        (known, method) if is_route(known) => Err(ApiError::new(
            405,
            "method_not_allowed",
            format!("{method:?} is not allowed on /v1/admin/{}", known.join("/")),
        )),
        (unknown, _) => Err(ApiError::new(
            404,
            "not_found",
            format!("no route for /v1/admin/{}", unknown.join("/")),
        )),
    }
}

fn is_route(path: &[&str]) -> bool {
    matches!(
        path,
        ["stats" | "jobs" | "failures" | "dead-letters" | "pauses" | "audit"]
            | ["jobs", _]
            | [
                "jobs",
                _,
                "status" | "priority" | "boost" | "retry" | "cancel"
            ]
            | ["dead-letters", _]
            | ["dead-letters", _, "replay"]
            | ["pauses", _, _]
    )
}

/// Trims a page fetched with one extra row; the cursor of its last row if there is more.
pub(crate) fn page_end<T>(
    rows: &mut Vec<T>,
    limit: u32,
    cursor: impl Fn(&T) -> String,
) -> Option<String> {
    if rows.len() > limit as usize {
        rows.truncate(limit as usize);
        rows.last().map(cursor)
    } else {
        None
    }
}
