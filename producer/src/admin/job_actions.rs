//! Operator actions on jobs: set status, priority, boost, retry and cancel, one job at a time
//! or in bulk (by ids or by filter, with a dry run), and the dead-letter replay. A requeued
//! job's message is sent at once (it is in the outbox already, so a failed send is re-sent by
//! the sweep).

use jobs_shared::api::bulk_request::{BulkRequest, Selection};
use jobs_shared::api::operator_action::{check_move, parse_int, parse_target};
use jobs_shared::job::family::Family;
use jobs_shared::job::lifecycle::JobStatus;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::retry::retry_policy::{plan_delivery_at, DeliveryPlan};
use jobs_shared::runtime::queue_send::queue_delay_limit;
use jobs_store::jobs::{self, Changed, MovedBy, OperatorMove, SummaryRow};
use serde_json::json;
use worker::{Env, Response};

use super::d1;
use super::jobs::summary;
use super::Admin;
use crate::dispatch;
use crate::job_view::no_such_job;
use crate::request::Request;
use crate::{body, env_config, respond};
use jobs_shared::runtime::queue_send::Outgoing;

/// A move: which (store `OperatorMove`: the states it may start from, where it goes), and its
/// audit name.
#[derive(Clone)]
pub struct Move {
    kind: OperatorMove,
    sources: Vec<JobStatus>,
    to: JobStatus,
    action: &'static str,
}

impl Move {
    fn of(kind: OperatorMove, action: &'static str) -> Move {
        Move {
            kind,
            sources: kind.sources(),
            to: kind.to(),
            action,
        }
    }

    /// A requeue (shared `move_sources`): as the state machine allows it, and of a queued job
    /// whose run_at is ahead, which makes it due now.
    pub fn retry(action: &'static str) -> Move {
        Move::of(OperatorMove::Retry, action)
    }

    pub fn cancel(action: &'static str) -> Move {
        Move::of(OperatorMove::Cancel, action)
    }

    /// Replay: a requeue of dead jobs only.
    pub fn replay(action: &'static str) -> Move {
        Move::of(OperatorMove::Replay, action)
    }

    /// The move to the status a request's body names (`{"status": ...}`, shared
    /// `parse_target`).
    fn to_target(body: &serde_json::Value, action: &'static str) -> Result<Move, ApiError> {
        let to = parse_target(body)?;
        let kind = OperatorMove::for_target(to).ok_or_else(|| {
            ApiError::new(422, "invalid_field", format!("{to} is set by the consumer"))
                .with_field("status")
        })?;
        Ok(Move::of(kind, action))
    }

    /// 409 naming both states.
    fn refusal(&self, from: JobStatus) -> Result<(), ApiError> {
        // A move to the state it is in refused: the job is due already (store `due_later`).
        if from == self.to && self.sources.contains(&from) {
            return Err(ApiError::new(
                409,
                "already_due",
                "the job is queued and due: it runs when a consumer takes its message (a retry \
                 makes only a queued job whose run_at is ahead due now)",
            )
            .with_field("status"));
        }
        check_move(from, self.to)?;
        let sources: Vec<&str> = self.sources.iter().map(|s| s.as_str()).collect();
        Err(ApiError::new(
            409,
            "illegal_transition",
            format!(
                "cannot move a job from {from} to {}: {} applies to {} jobs only",
                self.to,
                self.action,
                sources.join(", ")
            ),
        )
        .with_field("status"))
    }
}

/// POST /v1/admin/jobs/{id}/status `{"status": "queued" | "cancelled" | "skipped"}`
pub async fn set_status(
    admin: &Admin<'_>,
    req: &mut Request,
    id: &str,
) -> Result<Response, ApiError> {
    let body = body::json(req).await?;
    jobs_shared::request::field_error::only_fields(&body, &["status"])?;
    move_job(admin, id, Move::to_target(&body, "job.set_status")?).await
}

/// POST /v1/admin/jobs/{id}/retry or /cancel, POST /v1/admin/dead-letters/{id}/replay: one
/// job's move, by a route that takes no body.
pub async fn move_one(
    admin: &Admin<'_>,
    req: &mut Request,
    id: &str,
    mv: Move,
) -> Result<Response, ApiError> {
    body::none(req).await?;
    move_job(admin, id, mv).await
}

/// One job's move, once its request is read.
async fn move_job(admin: &Admin<'_>, id: &str, mv: Move) -> Result<Response, ApiError> {
    let db = d1::database(admin.env)?;
    let entry = admin.entry(mv.action, json!({ "id": id, "to": mv.to }));
    let changed = jobs::job_move_one(&db, id, mv.kind, MovedBy::Operator, &entry).await?;
    if let Some(job) = &changed.job {
        if mv.to == JobStatus::Queued {
            send(admin.env, std::slice::from_ref(job)).await;
        }
    }
    let held_by = changed.held_by.clone();
    answer(changed, id, |from| match &held_by {
        Some(holder) if mv.to.is_live() && mv.sources.contains(&from) => {
            Err(ApiError::new(409, "dedup_key_taken", key_taken(holder)).with_field("dedup_key"))
        }
        _ => mv.refusal(from),
    })
}

/// Why a job cannot go back to a live state.
fn key_taken(holder: &str) -> String {
    format!("dedup_key held by job {holder}, which is live; it must finish first")
}

/// POST /v1/admin/jobs/{id}/priority `{"priority": 0-100}`
pub async fn priority(
    admin: &Admin<'_>,
    req: &mut Request,
    id: &str,
) -> Result<Response, ApiError> {
    let body = body::json(req).await?;
    jobs_shared::request::field_error::only_fields(&body, &["priority"])?;
    let value = parse_int(
        &body,
        "priority",
        0..=jobs_shared::job::enqueue::MAX_PRIORITY,
    )?;
    change_priority(admin, id, value, false).await
}

/// POST /v1/admin/jobs/{id}/boost `{"by": 1-100}`: raises the priority, capped at 100.
pub async fn boost(admin: &Admin<'_>, req: &mut Request, id: &str) -> Result<Response, ApiError> {
    let body = body::json(req).await?;
    jobs_shared::request::field_error::only_fields(&body, &["by"])?;
    let by = parse_int(&body, "by", 1..=100)?;
    change_priority(admin, id, by, true).await
}

async fn change_priority(
    admin: &Admin<'_>,
    id: &str,
    value: i64,
    boost: bool,
) -> Result<Response, ApiError> {
    let db = d1::database(admin.env)?;
    let (action, target) = if boost {
        ("job.boost", json!({ "id": id, "by": value }))
    } else {
        ("job.priority", json!({ "id": id, "priority": value }))
    };
    let entry = admin.entry(action, target);
    let changed = jobs::job_set_priority(&db, id, value, boost, &entry).await?;
    if let (Some(job), Some(prior)) = (&changed.job, changed.prior_priority) {
        send_if_express(admin.env, job, prior).await;
    }
    answer(changed, id, |from| {
        Err(ApiError::new(
            409,
            "not_live",
            format!("the job is {from}: only a live job's priority can change"),
        )
        .with_field("status"))
    })
}

/// The changed job, or why not: 404 for no such job, else `refused(prior status)`.
fn answer(
    changed: Changed,
    id: &str,
    refused: impl Fn(JobStatus) -> Result<(), ApiError>,
) -> Result<Response, ApiError> {
    match (changed.job, changed.prior) {
        (Some(job), _) => respond::json(200, &json!({ "job": summary(&job) })),
        (None, None) => Err(no_such_job(id)),
        (None, Some(from)) => {
            refused(from)?;
            // Only reached if the job moved between the read and the guarded write.
            Err(ApiError::new(
                409,
                "conflict",
                format!("job {id} changed while the action ran; reload and retry"),
            ))
        }
    }
}

/// Bulk retry, cancel or replay: by ids or filter; `dry_run` counts what would move without
/// moving it. At most MAX_BULK jobs move per request; `remaining` says how many more could.
/// A job another live job's dedup key keeps from moving is answered in `conflicts`, with why;
/// the others move.
pub async fn bulk(admin: &Admin<'_>, req: &mut Request, mv: Move) -> Result<Response, ApiError> {
    let body = body::json(req).await?;
    let request = BulkRequest::parse(&body)?;
    bulk_move(admin, &body, request, mv).await
}

/// POST /v1/admin/jobs/status: bulk set status, `{"status": "queued" | "cancelled" |
/// "skipped"}` plus a bulk selection; answered as [`bulk`] is.
pub async fn bulk_set_status(admin: &Admin<'_>, req: &mut Request) -> Result<Response, ApiError> {
    let body = body::json(req).await?;
    let request = BulkRequest::parse_with(&body, &["status"])?;
    let mv = Move::to_target(&body, "jobs.set_status")?;
    bulk_move(admin, &body, request, mv).await
}

async fn bulk_move(
    admin: &Admin<'_>,
    body: &serde_json::Value,
    request: BulkRequest,
    mv: Move,
) -> Result<Response, ApiError> {
    let db = d1::database(admin.env)?;
    if request.dry_run {
        let now_ms = env_config::now_ms();
        let (count, conflicts) =
            jobs::job_count_movable(&db, &request.selection, mv.kind, now_ms).await?;
        return respond::json(
            200,
            &json!({ "dry_run": true, "count": count, "conflicts": conflicts }),
        );
    }
    let target = match &request.selection {
        Selection::Ids(ids) => json!({ "ids": ids, "to": mv.to }),
        Selection::Filter(_) => json!({ "filter": body.get("filter"), "to": mv.to }),
    };
    let entry = admin.entry(mv.action, target);
    let moved = jobs::job_move_many(&db, &request.selection, mv.kind, &entry).await?;
    if mv.to == JobStatus::Queued {
        send(admin.env, &moved.jobs).await;
    }
    let ids: Vec<&str> = moved.jobs.iter().map(|j| j.id.as_str()).collect();
    let conflicts: Vec<_> = moved
        .conflicts
        .iter()
        .map(|c| {
            json!({
                "id": c.id, "outcome": "conflict", "field": "dedup_key",
                "held_by": c.held_by, "reason": key_taken(&c.held_by),
            })
        })
        .collect();
    respond::json(
        200,
        &json!({
            "dry_run": false, "count": ids.len(), "ids": ids, "conflicts": conflicts,
            "remaining": moved.remaining,
        }),
    )
}

/// A waiting job raised into its family's express lane gets a message there, delayed to its due
/// time, so the raise takes effect now: its message in the normal lane waits behind that lane's
/// backlog and, when it comes, finds the job claimed or done. A job kept in D1 (scheduled,
/// paused, or due beyond the queue's delay limit) is sent to its lane when released.
async fn send_if_express(env: &Env, job: &SummaryRow, prior_priority: i64) {
    let waiting = matches!(
        JobStatus::parse(&job.status),
        Some(JobStatus::Queued | JobStatus::Retrying)
    ) && job.held_at.is_none();
    let rises =
        Family::parse(&job.family).is_some_and(|f| f.enters_express(prior_priority, job.priority));
    if !(waiting && rises) {
        return;
    }
    let plan = plan_delivery_at(job.run_at, env_config::now_ms(), queue_delay_limit(env));
    if let DeliveryPlan::Send { delay_secs } = plan {
        let outgoing: Vec<_> = Outgoing::stored(job.stored(), delay_secs)
            .into_iter()
            .collect();
        dispatch::send_all(env, &outgoing).await;
    }
}

/// Messages for requeued jobs, due now.
async fn send(env: &Env, jobs: &[SummaryRow]) {
    let outgoing: Vec<_> = jobs
        .iter()
        .filter_map(|job| Outgoing::stored(job.stored(), 0))
        .collect();
    dispatch::send_all(env, &outgoing).await;
}
