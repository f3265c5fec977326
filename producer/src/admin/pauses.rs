//! Pause and resume a job type or a family. While paused, the consumer claims none of its jobs
//! (no attempt is spent): it acks their messages and marks them held. Resume sends the held
//! jobs' messages again, due when each job is due: a page of them (`MAX_BULK`) in the request,
//! so a resume costs a bounded request whatever it held; the sweep releases the rest.

use jobs_shared::api::bulk_request::MAX_BULK;
use jobs_shared::job::pause::PauseTarget;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::runtime::queue_send::queue_delay_limit;
use jobs_shared::util::time_fmt::rfc3339;
use jobs_store::pauses;
use serde_json::json;
use worker::Response;

use super::d1;
use super::Admin;
use crate::dispatch;
use crate::request::Request;
use crate::{body, env_config, respond};

/// GET /v1/admin/pauses
pub async fn list(admin: &Admin<'_>) -> Result<Response, ApiError> {
    let rows = pauses::pause_list(&d1::database(admin.env)?).await?;
    let pauses: Vec<_> = rows
        .iter()
        .map(|p| {
            json!({
                "kind": p.kind,
                "name": p.name,
                "paused_at": rfc3339(p.paused_at),
                "paused_by": p.paused_by,
                "reason": p.reason,
                "held": p.held,
            })
        })
        .collect();
    respond::json(200, &json!({ "pauses": pauses }))
}

/// POST /v1/admin/pauses `{"kind": "type" | "family", "name", "reason"?}`: 201 when paused
/// now, 200 when it was paused already.
pub async fn pause(admin: &Admin<'_>, req: &mut Request) -> Result<Response, ApiError> {
    let body = body::json(req).await?;
    let (target, reason) = PauseTarget::from_body(&body)?;
    let entry = admin.entry("pause", json!({ "kind": target.kind, "name": target.name }));
    let created = pauses::pause_insert(
        &d1::database(admin.env)?,
        &target,
        reason.as_deref(),
        &entry,
    )
    .await?;
    respond::json(
        if created { 201 } else { 200 },
        &json!({ "kind": target.kind, "name": target.name, "paused": true, "created": created }),
    )
}

/// DELETE /v1/admin/pauses/{kind}/{name}: resumes, and re-sends a page of the held jobs;
/// answers how many were `released` and how many `remaining` the sweep will release.
pub async fn resume(admin: &Admin<'_>, kind: &str, name: &str) -> Result<Response, ApiError> {
    let target = PauseTarget::parse(kind, name)?;
    let entry = admin.entry(
        "resume",
        json!({ "kind": target.kind, "name": target.name }),
    );
    let resumed =
        pauses::pause_delete(&d1::database(admin.env)?, &target, MAX_BULK as u32, &entry).await?;
    let (now, limit) = (env_config::now_ms(), queue_delay_limit(admin.env));
    // Due beyond the queue's delay limit: the sweep sends it from the outbox.
    let outgoing: Vec<_> = resumed
        .released
        .iter()
        .filter_map(|job| dispatch::outgoing(job, now, limit, false))
        .collect();
    dispatch::send_all(admin.env, &outgoing).await;
    if !resumed.existed {
        return Err(ApiError::new(
            404,
            "not_found",
            format!("{} {} is not paused", target.kind, target.name),
        )
        .with_field("name"));
    }
    respond::json(
        200,
        &json!({
            "kind": target.kind, "name": target.name, "paused": false,
            "released": resumed.released.len(), "remaining": resumed.remaining,
        }),
    )
}
