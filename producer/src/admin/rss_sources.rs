//! /v1/admin/rss-sources: the RSS sources the `rss_feed_refresh` handler reads. List them with
//! their counters and errors, add one, and re-enable (or disable) one; re-enabling (or
//! `error_count: 0`) clears the error streak that disabled it, in one call.

use jobs_shared::{rfc3339, uuid_v4, validate_new_source, validate_source_patch, ApiError};
use serde::Deserialize;
use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use worker::{Env, Request, Response};

use crate::admin::d1;
use crate::{body, env_config, random, respond};

#[derive(Deserialize)]
struct SourceRow {
    id: String,
    name: String,
    url: String,
    refresh_interval_minutes: i64,
    is_active: i64,
    error_count: i64,
    last_error_message: Option<String>,
    last_fetched_at: Option<i64>,
    last_attempt_at: Option<i64>,
    retry_after_until: Option<i64>,
    items_new: i64,
    items_duplicate: i64,
    items_skipped: i64,
    created_at: i64,
}

const COLUMNS: &str = "id, name, url, refresh_interval_minutes, is_active, error_count, \
     last_error_message, last_fetched_at, last_attempt_at, retry_after_until, items_new, items_duplicate, \
     items_skipped, created_at";

/// GET /v1/admin/rss-sources
pub async fn list(env: &Env) -> Result<Response, ApiError> {
    let db = d1::database(env)?;
    let rows: Vec<SourceRow> = db
        .prepare(format!(
            "SELECT {COLUMNS} FROM rss_sources ORDER BY created_at, id"
        ))
        .all()
        .await
        .and_then(|r| r.results())
        .map_err(|e| respond::internal(&e))?;
    respond::json(
        200,
        &json!({ "sources": rows.iter().map(view).collect::<Vec<_>>() }),
    )
}

/// POST /v1/admin/rss-sources `{name, url, refresh_interval_minutes?}`
pub async fn add(req: &mut Request, env: &Env) -> Result<Response, ApiError> {
    let source = validate_new_source(&body::json(req).await?)?;
    let id = uuid_v4(random::bytes()?);
    let now = env_config::now_ms() as f64;
    let db = d1::database(env)?;
    let row: Option<SourceRow> = db
        .prepare(format!(
            "INSERT INTO rss_sources (id, name, url, refresh_interval_minutes, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (url) DO NOTHING RETURNING {COLUMNS}"
        ))
        .bind(&[
            id.into(),
            source.name.as_str().into(),
            source.url.as_str().into(),
            source.refresh_interval_minutes.into(),
            now.into(),
        ])
        .map_err(|e| respond::internal(&e))?
        .first(None)
        .await
        .map_err(|e| respond::internal(&e))?;
    match row {
        Some(row) => respond::json(201, &view(&row)),
        None => {
            Err(ApiError::new(409, "conflict", "a source with this url exists").with_field("url"))
        }
    }
}

/// PATCH /v1/admin/rss-sources/{id} `{"is_active"?: true|false, "error_count"?: 0}`.
pub async fn set_active(req: &mut Request, env: &Env, id: &str) -> Result<Response, ApiError> {
    let patch = validate_source_patch(&body::json(req).await?)?;
    let db = d1::database(env)?;
    let row: Option<SourceRow> = db
        .prepare(format!(
            "UPDATE rss_sources SET is_active = COALESCE(?2, is_active), updated_at = ?3, \
             error_count = CASE WHEN ?4 = 1 THEN 0 ELSE error_count END, \
             last_error_message = CASE WHEN ?4 = 1 THEN NULL ELSE last_error_message END, \
             retry_after_until = CASE WHEN ?2 = 1 THEN NULL ELSE retry_after_until END \
             WHERE id = ?1 RETURNING {COLUMNS}"
        ))
        .bind(&[
            id.into(),
            patch
                .is_active
                .map_or(JsValue::NULL, |active| i32::from(active).into()),
            (env_config::now_ms() as f64).into(),
            i32::from(patch.resets_errors()).into(),
        ])
        .map_err(|e| respond::internal(&e))?
        .first(None)
        .await
        .map_err(|e| respond::internal(&e))?;
    match row {
        Some(row) => respond::json(200, &view(&row)),
        None => {
            Err(ApiError::new(404, "not_found", format!("no rss source {id}")).with_field("id"))
        }
    }
}

fn view(row: &SourceRow) -> Value {
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
        "items": { "new": row.items_new, "duplicate": row.items_duplicate, "skipped": row.items_skipped },
        "created_at": rfc3339(row.created_at),
    })
}
