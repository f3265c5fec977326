//! /v1/admin/schedules: recurring jobs, their CRUD and toggle (docs/operating.md "Schedules API").
//! Every write is validated whole (the job as an enqueue would be, the cron expression parsed)
//! before D1 sees it; `next_run_at` is computed here, from the request's time. Every change is
//! written with its audit row (`schedule.create`, `.update`, `.toggle`, `.delete`) in one batch.

use jobs_shared::api::page_cursor;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::runtime::faults;
use jobs_shared::schedule::schedule_spec::{merge_patch, validate_schedule, ScheduleSpec};
use jobs_shared::util::time_fmt::rfc3339;
use jobs_store::schedules::{self, ScheduleRow};
use serde_json::{json, Value};
use worker::{D1Database, Env, Response};

use crate::admin::{self, d1, Admin};
use crate::env_config::now_ms;
use crate::job_view::parse_json;
use crate::request::Request;
use crate::{body, respond, time_zone_data};

const PAGE: u32 = 50;
const MAX_PAGE: u32 = 100;
const RECENT_RUNS: u32 = 20;

/// GET /v1/admin/schedules?limit&cursor
pub async fn list(req: &Request, env: &Env) -> Result<Response, ApiError> {
    let db = &d1::database(env)?;
    // Unlike the other admin lists, a repeated key is not refused here: its first value counts.
    let pairs = d1::query_pairs(req);
    let limit = page_cursor::limit(d1::param(&pairs, "limit"), PAGE, MAX_PAGE)?;
    let after = d1::param(&pairs, "cursor")
        .map(page_cursor::decode)
        .transpose()?
        .map_or(0, |(id, _)| id);
    let mut rows = schedules::schedule_list(db, after, limit).await?;
    let next_cursor = admin::page_end(&mut rows, limit, |last| {
        page_cursor::encode(last.id, &last.name)
    });
    let schedules: Vec<Value> = rows.iter().map(view).collect();
    respond::json(
        200,
        &json!({ "schedules": schedules, "next_cursor": next_cursor }),
    )
}

/// POST /v1/admin/schedules
pub async fn create(admin: &Admin<'_>, req: &mut Request) -> Result<Response, ApiError> {
    let db = &d1::database(admin.env)?;
    let spec = validated(admin.env, &body::json(req).await?).await?;
    let now = now_ms();
    let next = spec.enabled.then(|| spec.cron.next_after(now)).flatten();
    let entry = admin.entry_at("schedule.create", json!({ "name": spec.name }), now);
    match schedules::schedule_insert(db, &spec, next, &entry).await? {
        Some(row) => respond::json(201, &view(&row)),
        None => Err(name_taken(&spec.name)),
    }
}

/// GET /v1/admin/schedules/{id}, with its recent runs.
pub async fn get(env: &Env, id: &str) -> Result<Response, ApiError> {
    let db = &d1::database(env)?;
    let (row, runs) = schedules::schedule_get_with_runs(db, id, RECENT_RUNS)
        .await?
        .ok_or_else(|| not_found(id))?;
    let mut body = view(&row);
    body["recent_runs"] = runs
        .iter()
        .map(|r| {
            json!({
                "due_at": rfc3339(r.due_at),
                "fired_at": rfc3339(r.fired_at),
                "job_id": r.job_id,
                "skipped": r.skipped,
                "missed": r.missed,
            })
        })
        .collect();
    respond::json(200, &body)
}

/// PUT /v1/admin/schedules/{id} (the whole schedule) or PATCH (the given fields over the
/// stored ones).
pub async fn replace(
    admin: &Admin<'_>,
    req: &mut Request,
    id: &str,
    patch: bool,
) -> Result<Response, ApiError> {
    let db = &d1::database(admin.env)?;
    let body = body::json(req).await?;
    let current = found(db, id).await?;
    let input = if patch {
        merge_patch(&writable(&current), &body)?
    } else {
        body
    };
    save(
        admin,
        "schedule.update",
        &current,
        validated(admin.env, &input).await?,
    )
    .await
}

/// POST /v1/admin/schedules/{id}/toggle: flips `enabled` (no body, or `{}`), or sets it from a
/// JSON body `{"enabled": bool}`.
pub async fn toggle(admin: &Admin<'_>, req: &mut Request, id: &str) -> Result<Response, ApiError> {
    let db = &d1::database(admin.env)?;
    // A body is announced by its content type (body::json insists on JSON).
    let has_body = req.headers().get("content-type").ok().flatten().is_some();
    let current = found(db, id).await?;
    let flipped = current.enabled == 0;
    let enabled = if has_body {
        let body = body::json(req).await?;
        match body.as_object().map(|o| (o.len(), o.get("enabled"))) {
            Some((0, _)) => flipped,
            Some((1, Some(Value::Bool(enabled)))) => *enabled,
            _ => {
                return Err(ApiError::new(
                    422,
                    "invalid_field",
                    "the body may only be {\"enabled\": true|false}",
                )
                .with_field("enabled"))
            }
        }
    } else {
        flipped
    };
    let input = merge_patch(&writable(&current), &json!({ "enabled": enabled }))?;
    save(
        admin,
        "schedule.toggle",
        &current,
        validated(admin.env, &input).await?,
    )
    .await
}

/// `input` checked as a whole schedule, with the time-zone database when its cron expression
/// names a zone.
async fn validated(env: &Env, input: &Value) -> Result<ScheduleSpec, ApiError> {
    let expression = input["cron_expression"].as_str().unwrap_or_default();
    let loaded = time_zone_data::load_for(env, expression).await?;
    validate_schedule(input, loaded.zones().as_ref())
}

/// DELETE /v1/admin/schedules/{id}
pub async fn delete(admin: &Admin<'_>, id: &str) -> Result<Response, ApiError> {
    let db = &d1::database(admin.env)?;
    let entry = admin.entry("schedule.delete", json!({ "id": id }));
    if !schedules::schedule_delete(db, id, &entry).await? {
        return Err(not_found(id));
    }
    Ok(Response::empty()?.with_status(204))
}

/// Writes an update. The next run is recomputed, from now, when the expression changes or
/// the schedule is (re-)enabled: time spent disabled is not caught up. A disabled schedule has
/// none (`schedules::schedule_update`).
async fn save(
    admin: &Admin<'_>,
    action: &str,
    current: &ScheduleRow,
    spec: ScheduleSpec,
) -> Result<Response, ApiError> {
    let db = &d1::database(admin.env)?;
    let now = now_ms();
    let target = json!({ "id": current.id, "name": spec.name, "enabled": spec.enabled });
    let entry = admin.entry_at(action, target, now);
    let replan =
        spec.enabled && (current.enabled == 0 || current.cron_expression != spec.cron_expression);
    let next = replan.then(|| spec.cron.next_after(now)).flatten();
    match schedules::schedule_update(db, current, &spec, next, &entry).await {
        Ok(Some(row)) => respond::json(200, &view(&row)),
        Ok(None) => Err(ApiError::new(
            409,
            "conflict",
            "the schedule changed while this request was made; read it again and retry",
        )),
        Err(e) if e.to_string().contains("UNIQUE") => Err(name_taken(&spec.name)),
        Err(e) => Err(faults::internal(&e)),
    }
}

async fn found(db: &D1Database, id: &str) -> Result<ScheduleRow, ApiError> {
    schedules::schedule_get(db, id)
        .await?
        .ok_or_else(|| not_found(id))
}

fn not_found(id: &str) -> ApiError {
    ApiError::new(404, "not_found", format!("no schedule {id}")).with_field("id")
}

fn name_taken(name: &str) -> ApiError {
    ApiError::new(
        409,
        "conflict",
        format!("a schedule named \"{name}\" exists"),
    )
    .with_field("name")
}

/// The fields a client may write, as they are stored (the base of a PATCH).
fn writable(row: &ScheduleRow) -> Value {
    json!({
        "name": row.name,
        "description": row.description,
        "type": row.job_type,
        "payload": parse_json(&row.payload),
        "cron_expression": row.cron_expression,
        "enabled": row.enabled != 0,
        "priority": row.priority,
        "max_attempts": row.max_attempts,
        "retry": row.retry_policy.as_deref().map(parse_json),
        "dedup_key": row.dedup_key,
        "created_by": row.created_by,
    })
}

fn view(row: &ScheduleRow) -> Value {
    let mut body = writable(row);
    body["id"] = row.id.into();
    body["next_run_at"] = row.next_run_at.map(rfc3339).into();
    body["last_run_at"] = row.last_run_at.map(rfc3339).into();
    body["missed_runs"] = row.missed_runs.into();
    body["created_at"] = rfc3339(row.created_at).into();
    body["updated_at"] = rfc3339(row.updated_at).into();
    body
}
