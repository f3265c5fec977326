//! SQL for schedules (recurring jobs). Single statements through D1's runtime API; the sweep's
//! writes to the same table are in maintenance/periodic_job_enqueuer.rs.

use jobs_shared::ScheduleSpec;
use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::D1Database;

use crate::job_store::{num, opt_str};

/// A stored schedule, as D1 returns it.
#[derive(Deserialize)]
pub struct ScheduleRow {
    pub id: i64,
    pub name: String,
    pub description: Option<String>,
    #[serde(rename = "type")]
    pub job_type: String,
    pub payload: String,
    pub cron_expression: String,
    pub enabled: i64,
    pub priority: i64,
    pub max_attempts: Option<i64>,
    pub dedup_key: Option<String>,
    pub next_run_at: Option<i64>,
    pub last_run_at: Option<i64>,
    pub missed_runs: i64,
    pub created_by: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One run of a schedule.
#[derive(Deserialize)]
pub struct RunRow {
    pub due_at: i64,
    pub fired_at: i64,
    pub job_id: Option<String>,
    pub missed: i64,
}

const COLUMNS: &str = "id, name, description, type, payload, cron_expression, enabled, priority, \
    max_attempts, dedup_key, next_run_at, last_run_at, missed_runs, created_by, created_at, updated_at";

/// The path's `{id}`: a numeric id, or else the schedule's unique name.
fn key(id_or_name: &str) -> (JsValue, &'static str) {
    match id_or_name.parse::<i64>() {
        Ok(id) => (num(id), "id = ?1"),
        Err(_) => (id_or_name.into(), "name = ?1"),
    }
}

/// A page in id order, after the id `after`; one more row than asked says whether more follow.
pub async fn list(db: &D1Database, after: i64, limit: u32) -> worker::Result<Vec<ScheduleRow>> {
    db.prepare(format!(
        "SELECT {COLUMNS} FROM schedules WHERE id > ?1 ORDER BY id LIMIT ?2"
    ))
    .bind(&[num(after), num(i64::from(limit) + 1)])?
    .all()
    .await?
    .results()
}

pub async fn find(db: &D1Database, id_or_name: &str) -> worker::Result<Option<ScheduleRow>> {
    let (value, filter) = key(id_or_name);
    db.prepare(format!("SELECT {COLUMNS} FROM schedules WHERE {filter}"))
        .bind(&[value])?
        .first(None)
        .await
}

/// A schedule and its latest `limit` runs, newest first, in one round trip.
pub async fn find_with_runs(
    db: &D1Database,
    id_or_name: &str,
    limit: u32,
) -> worker::Result<Option<(ScheduleRow, Vec<RunRow>)>> {
    let (value, filter) = key(id_or_name);
    let results = db
        .batch(vec![
            db.prepare(format!("SELECT {COLUMNS} FROM schedules WHERE {filter}"))
                .bind(std::slice::from_ref(&value))?,
            db.prepare(format!(
                "SELECT due_at, fired_at, job_id, missed FROM schedule_runs \
                 WHERE schedule_id = (SELECT id FROM schedules WHERE {filter}) \
                 ORDER BY due_at DESC LIMIT ?2"
            ))
            .bind(&[value, num(limit.into())])?,
        ])
        .await?;
    let Some(row) = results[0].results::<ScheduleRow>()?.pop() else {
        return Ok(None);
    };
    Ok(Some((row, results[1].results()?)))
}

/// The spec's columns in the order `?2`..`?11` of the statements below.
fn spec_params(spec: &ScheduleSpec, next_run_at: Option<i64>) -> Vec<JsValue> {
    vec![
        spec.name.as_str().into(),
        opt_str(spec.description.as_deref()),
        spec.job_type.as_str().into(),
        spec.payload.as_str().into(),
        spec.cron_expression.as_str().into(),
        num(spec.enabled.into()),
        num(spec.priority),
        spec.max_attempts.map_or(JsValue::NULL, |n| num(n.into())),
        opt_str(spec.dedup_key.as_deref()),
        next_run_at.map_or(JsValue::NULL, num),
    ]
}

/// Inserts a schedule; `None` when the name is taken.
pub async fn insert(
    db: &D1Database,
    spec: &ScheduleSpec,
    next_run_at: Option<i64>,
    now_ms: i64,
) -> worker::Result<Option<ScheduleRow>> {
    let mut params = vec![num(now_ms)];
    params.extend(spec_params(spec, next_run_at));
    params.push(opt_str(spec.created_by.as_deref()));
    db.prepare(format!(
        "INSERT INTO schedules (name, description, type, payload, cron_expression, enabled, priority, \
         max_attempts, dedup_key, next_run_at, created_by, created_at, updated_at) \
         VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?1, ?1) \
         ON CONFLICT (name) DO NOTHING RETURNING {COLUMNS}"
    ))
    .bind(&params)?
    .first(None)
    .await
}

/// Replaces a schedule's fields, if it is still at `updated_at` (so two concurrent edits
/// cannot silently merge; the sweep does not touch `updated_at`). `next_run_at` `None` keeps
/// the stored one. `Ok(None)`: it changed or went meanwhile; `Err` with a UNIQUE failure: the
/// new name is taken.
pub async fn update(
    db: &D1Database,
    current: &ScheduleRow,
    spec: &ScheduleSpec,
    next_run_at: Option<i64>,
    now_ms: i64,
) -> worker::Result<Option<ScheduleRow>> {
    let mut params = vec![num(current.id)];
    params.extend(spec_params(spec, next_run_at));
    params.push(opt_str(spec.created_by.as_deref()));
    params.push(num(now_ms));
    params.push(num(current.updated_at));
    db.prepare(format!(
        "UPDATE schedules SET name = ?2, description = ?3, type = ?4, payload = ?5, cron_expression = ?6, \
         enabled = ?7, priority = ?8, max_attempts = ?9, dedup_key = ?10, next_run_at = COALESCE(?11, next_run_at), \
         created_by = ?12, updated_at = ?13 WHERE id = ?1 AND updated_at = ?14 RETURNING {COLUMNS}"
    ))
    .bind(&params)?
    .first(None)
    .await
}

/// Deletes a schedule and its run records, in one round trip; false if there was none.
pub async fn delete(db: &D1Database, id_or_name: &str) -> worker::Result<bool> {
    let (value, filter) = key(id_or_name);
    let results = db
        .batch(vec![
            db.prepare(format!(
                "DELETE FROM schedule_runs \
                 WHERE schedule_id = (SELECT id FROM schedules WHERE {filter})"
            ))
            .bind(std::slice::from_ref(&value))?,
            db.prepare(format!("DELETE FROM schedules WHERE {filter} RETURNING id"))
                .bind(&[value])?,
        ])
        .await?;
    Ok(!results[1].results::<serde_json::Value>()?.is_empty())
}
