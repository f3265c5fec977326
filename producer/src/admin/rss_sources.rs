//! /v1/admin/rss-sources: the RSS sources the `rss_feed_refresh` handler reads. List them with
//! their counters and errors, add one, and re-enable (or disable) one; re-enabling (or
//! `error_count: 0`) clears the error streak that disabled it, in one call. A disabled source
//! says why and since when (`disabled_reason`, `disabled_at`).

use jobs_shared::handlers::feed::{validate_new_source, validate_source_patch};
use jobs_shared::job::ids::uuid_v4;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::util::time_fmt::rfc3339;
use jobs_store::rss_sources::{
    rss_source_insert, rss_source_list, rss_source_set_active, RssSource,
};
use serde_json::{json, Value};
use worker::{Env, Response};

use crate::admin::{d1, Admin};
use crate::request::Request;
use crate::{body, random, respond};

/// GET /v1/admin/rss-sources
pub async fn list(env: &Env) -> Result<Response, ApiError> {
    let db = d1::database(env)?;
    let rows = rss_source_list(&db).await?;
    respond::json(
        200,
        &json!({ "sources": rows.iter().map(view).collect::<Vec<_>>() }),
    )
}

/// POST /v1/admin/rss-sources `{name, url, refresh_interval_minutes?}`
pub async fn add(admin: &Admin<'_>, req: &mut Request) -> Result<Response, ApiError> {
    let source = validate_new_source(&body::json(req).await?)?;
    let id = uuid_v4(random::bytes()?);
    let db = d1::database(admin.env)?;
    let entry = admin.entry("rss_source.add", json!({ "id": id, "url": source.url }));
    let row = rss_source_insert(&db, id.clone(), &source, &entry).await?;
    match row {
        Some(row) => respond::json(201, &view(&row)),
        None => {
            Err(ApiError::new(409, "conflict", "a source with this url exists").with_field("url"))
        }
    }
}

/// PATCH /v1/admin/rss-sources/{id} `{"is_active"?: true|false, "error_count"?: 0}`.
pub async fn set_active(
    admin: &Admin<'_>,
    req: &mut Request,
    id: &str,
) -> Result<Response, ApiError> {
    let body = body::json(req).await?;
    let patch = validate_source_patch(&body)?;
    let db = d1::database(admin.env)?;
    let reason = format!("disabled by an operator ({})", admin.actor);
    let entry = admin.entry("rss_source.set_active", json!({ "id": id, "patch": body }));
    let row = rss_source_set_active(&db, id, patch, &reason, &entry).await?;
    match row {
        Some(row) => respond::json(200, &view(&row)),
        None => {
            Err(ApiError::new(404, "not_found", format!("no rss source {id}")).with_field("id"))
        }
    }
}

fn view(row: &RssSource) -> Value {
    json!({
        "id": row.id,
        "name": row.name,
        "url": row.url,
        "refresh_interval_minutes": row.refresh_interval_minutes,
        "is_active": row.is_active != 0,
        "error_count": row.error_count,
        "last_error_message": row.last_error_message,
        "last_fetched_at": row.last_fetched_at.map(rfc3339),
        "last_attempt_at": row.last_attempt_at.map(rfc3339),
        "retry_after_until": row.retry_after_until.map(rfc3339),
        "disabled_reason": row.disabled_reason,
        "disabled_at": row.disabled_at.map(rfc3339),
        "items": { "new": row.items_new, "duplicate": row.items_duplicate, "skipped": row.items_skipped },
        "created_at": rfc3339(row.created_at),
    })
}
