//! The `schedules` table (recurring jobs) and its `schedule_runs` (one row per run, the key a
//! repeated tick cannot write twice): the admin API's CRUD, and the sweep's firing
//! (`periodic_job_enqueuer`), lateness (alerts) and retention.

use jobs_shared::job::job_type::JobType;
use jobs_shared::job::registry::ScheduleGate;
use jobs_shared::observe::alert_rules::LateSchedule;
use jobs_shared::observe::prometheus::LabelledValue;
use jobs_shared::schedule::cron_schedule::CatchUp;
use jobs_shared::schedule::schedule_spec::ScheduleSpec;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use crate::audit::{audit_insert_after_write, write_audited, Entry};
use crate::jobs::Unsent;

/// A stored schedule, as D1 returns it.
#[derive(Deserialize)]
pub struct ScheduleRow {
    pub id: i64,
    pub name: String,
    pub description: Option<String>,
    pub job_type: String,
    pub payload: String,
    pub cron_expression: String,
    pub enabled: i64,
    pub priority: i64,
    pub max_attempts: Option<i64>,
    /// Each run's own retry policy (JSON, as a job stores it); NULL: the type's.
    pub retry_policy: Option<String>,
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
pub struct ScheduleRunRow {
    pub due_at: i64,
    pub fired_at: i64,
    pub job_id: Option<String>,
    pub missed: i64,
    /// Why it enqueued no job (migration 0020); NULL when it did.
    pub skipped: Option<String>,
}

/// The path's `{id}`: a numeric id, or else the schedule's unique name. Bound as `?1` (the id)
/// and `?2` (the name), the other one NULL, for `WHERE id = ?1 OR name = ?2` (SQLite looks up
/// both, by the primary key and by the name's index; the NULL one finds nothing).
struct Key<'a> {
    id: Option<i64>,
    name: Option<&'a str>,
}

fn key(id_or_name: &str) -> Key<'_> {
    match id_or_name.parse::<i64>() {
        Ok(id) => Key {
            id: Some(id),
            name: None,
        },
        Err(_) => Key {
            id: None,
            name: Some(id_or_name),
        },
    }
}

/// A page in id order, after the id `after`; one more row than asked says whether more follow.
pub async fn schedule_list(
    db: &D1Database,
    after: i64,
    limit: u32,
) -> worker::Result<Vec<ScheduleRow>> {
    let limit = i64::from(limit) + 1;
    sql!(db, ScheduleRow =>
        "SELECT id, name, description, type AS job_type, payload, cron_expression, enabled, \
         priority, max_attempts, retry_policy, dedup_key, next_run_at, last_run_at, missed_runs, \
         created_by, created_at, updated_at FROM schedules WHERE id > ?1 ORDER BY id LIMIT ?2",
        after,
        limit
    )?
    .all()
    .await?
    .results()
}

pub async fn schedule_get(
    db: &D1Database,
    id_or_name: &str,
) -> worker::Result<Option<ScheduleRow>> {
    let key = key(id_or_name);
    sql!(db, ScheduleRow =>
        "SELECT id, name, description, type AS job_type, payload, cron_expression, enabled, \
         priority, max_attempts, retry_policy, dedup_key, next_run_at, last_run_at, missed_runs, \
         created_by, created_at, updated_at FROM schedules WHERE id = ?1 OR name = ?2",
        key.id,
        key.name
    )?
    .first(None)
    .await
}

/// A schedule and its latest `limit` runs, newest first, in one round trip.
pub async fn schedule_get_with_runs(
    db: &D1Database,
    id_or_name: &str,
    limit: u32,
) -> worker::Result<Option<(ScheduleRow, Vec<ScheduleRunRow>)>> {
    let key = key(id_or_name);
    let results = db
        .batch(vec![
            sql!(db, ScheduleRow =>
                "SELECT id, name, description, type AS job_type, payload, cron_expression, \
                 enabled, priority, max_attempts, retry_policy, dedup_key, next_run_at, \
                 last_run_at, missed_runs, created_by, created_at, updated_at FROM schedules \
                 WHERE id = ?1 OR name = ?2",
                key.id,
                key.name
            )?,
            sql!(db, ScheduleRunRow =>
                "SELECT due_at, fired_at, job_id, missed, skipped FROM schedule_runs \
                 WHERE schedule_id = (SELECT id FROM schedules WHERE id = ?1 OR name = ?2) \
                 ORDER BY due_at DESC LIMIT ?3",
                key.id,
                key.name,
                limit
            )?,
        ])
        .await?;
    let Some(row) = results[0].results::<ScheduleRow>()?.pop() else {
        return Ok(None);
    };
    Ok(Some((row, results[1].results()?)))
}

/// Inserts a schedule; `None` when the name is taken.
pub async fn schedule_insert(
    db: &D1Database,
    spec: &ScheduleSpec,
    next_run_at: Option<i64>,
    entry: &Entry<'_>,
) -> worker::Result<Option<ScheduleRow>> {
    let insert = sql!(db, ScheduleRow =>
        "INSERT INTO schedules (name, description, type, payload, cron_expression, enabled, \
         priority, max_attempts, dedup_key, next_run_at, created_by, created_at, updated_at, \
         retry_policy) VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?1, ?1, ?13) \
         ON CONFLICT (name) DO NOTHING RETURNING id, name, description, type AS job_type, \
         payload, cron_expression, enabled, priority, max_attempts, retry_policy, dedup_key, \
         next_run_at, last_run_at, missed_runs, created_by, created_at, updated_at",
        entry.now_ms,
        spec.name,
        spec.description,
        spec.job_type.as_str(),
        spec.payload,
        spec.cron_expression,
        spec.enabled,
        spec.priority,
        spec.max_attempts,
        spec.dedup_key,
        next_run_at,
        spec.created_by,
        spec.retry_policy
    )?;
    write_audited(db, insert, entry).await
}

/// Replaces a schedule's fields, if it is still at `updated_at` (so two concurrent edits
/// cannot silently merge; the sweep does not touch `updated_at`). `next_run_at` `None` keeps
/// the stored one, but a disabled schedule has none: it would not run then. `Ok(None)`: it
/// changed or went meanwhile; `Err` with a UNIQUE failure: the new name is taken.
pub async fn schedule_update(
    db: &D1Database,
    current: &ScheduleRow,
    spec: &ScheduleSpec,
    next_run_at: Option<i64>,
    entry: &Entry<'_>,
) -> worker::Result<Option<ScheduleRow>> {
    let update = sql!(db, ScheduleRow =>
        "UPDATE schedules SET name = ?2, description = ?3, type = ?4, payload = ?5, \
         cron_expression = ?6, enabled = ?7, priority = ?8, max_attempts = ?9, dedup_key = ?10, \
         next_run_at = IIF(?7, COALESCE(?11, next_run_at), NULL), created_by = ?12, \
         updated_at = ?13, retry_policy = ?15 WHERE id = ?1 AND updated_at = ?14 \
         RETURNING id, name, description, type AS job_type, payload, cron_expression, enabled, \
         priority, max_attempts, retry_policy, dedup_key, next_run_at, last_run_at, missed_runs, \
         created_by, created_at, updated_at",
        current.id,
        spec.name,
        spec.description,
        spec.job_type.as_str(),
        spec.payload,
        spec.cron_expression,
        spec.enabled,
        spec.priority,
        spec.max_attempts,
        spec.dedup_key,
        next_run_at,
        spec.created_by,
        entry.now_ms,
        current.updated_at,
        spec.retry_policy
    )?;
    write_audited(db, update, entry).await
}

/// Deletes a schedule and its run records, with its audit row, in one round trip; false if there
/// was none.
pub async fn schedule_delete(
    db: &D1Database,
    id_or_name: &str,
    entry: &Entry<'_>,
) -> worker::Result<bool> {
    let key = key(id_or_name);
    let results = db
        .batch(vec![
            sql!(
                db,
                "DELETE FROM schedule_runs \
                 WHERE schedule_id = (SELECT id FROM schedules WHERE id = ?1 OR name = ?2)",
                key.id,
                key.name
            )?,
            sql!(
                db,
                "DELETE FROM schedules WHERE id = ?1 OR name = ?2 RETURNING id",
                key.id,
                key.name
            )?,
            audit_insert_after_write(db, entry, true)?,
        ])
        .await?;
    Ok(!results[1].results::<serde_json::Value>()?.is_empty())
}

/// An enabled schedule that is due (or was never planned), as the sweep reads it.
#[derive(Deserialize)]
pub struct DueSchedule {
    pub id: i64,
    pub name: String,
    pub job_type: String,
    pub cron_expression: String,
    pub max_attempts: Option<u32>,
    pub next_run_at: Option<i64>,
}

/// Up to `limit` enabled schedules due at `now_ms` or never planned, soonest first.
pub async fn schedule_list_due(
    db: &D1Database,
    now_ms: i64,
    limit: u32,
) -> worker::Result<Vec<DueSchedule>> {
    sql!(db, DueSchedule =>
        "SELECT id AS \"id!\", name, type AS job_type, cron_expression, max_attempts, next_run_at \
         FROM schedules WHERE enabled = 1 AND (next_run_at IS NULL OR next_run_at <= ?1) \
         ORDER BY next_run_at LIMIT ?2",
        now_ms,
        limit
    )?
    .all()
    .await?
    .results()
}

/// First plan of a schedule nobody has planned yet.
pub fn schedule_plan(db: &D1Database, id: i64, next: i64) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "UPDATE schedules SET next_run_at = ?2 \
         WHERE id = ?1 AND next_run_at IS NULL AND enabled = 1",
        id,
        next
    )
}

/// One run of a schedule, as [`schedule_fire`] writes it.
pub struct Fire<'a> {
    pub schedule_id: i64,
    /// The run's due time, the schedule's `next_run_at` it was read with.
    pub due_at: i64,
    /// The new job's id, type and max attempts.
    pub job_id: &'a str,
    pub job_type: JobType,
    pub max_attempts: u32,
    /// The schedule's next due time, and the runs missed before this one.
    pub catch_up: CatchUp,
}

/// The run due at `fire.due_at`: its job (returning it, rows: `jobs::Unsent`, read by its
/// columns' names; enqueued by `schedule:<name>`), its record, and the schedule's next due
/// time, each guarded by the schedule still being due at that time (the compare-and-set) and
/// the job's insert by the run having no record yet.
///
/// A type's `ScheduleGate` picks the job's insert and its record: `Always`, or
/// `UntaggedFeedItems`, whose insert also needs an untagged item to exist and puts their count
/// (read to at most 10,000, so the read stays bounded) in the payload's `untagged_count`. A run
/// with no job says why (`skipped`): the gate found no work (`no_untagged_items`), or else the
/// dedup key was held (`dedup_key_live`; the insert's other guards would stop this record too).
pub fn schedule_fire(
    db: &D1Database,
    fire: &Fire,
    now_ms: i64,
) -> worker::Result<[D1PreparedStatement; 3]> {
    let (id, due_at, job_id) = (fire.schedule_id, fire.due_at, fire.job_id);
    let (family, missed) = (fire.job_type.family().as_str(), fire.catch_up.missed);
    let max_attempts = fire.max_attempts;
    let (insert_job, record) = match fire.job_type.schedule_gate() {
        ScheduleGate::Always => (
            sql!(
                db,
                Unsent => "INSERT INTO jobs (id, type, family, status, priority, payload, dedup_key, \
                 attempts, max_attempts, run_at, created_at, updated_at, enqueued_by, retry_policy) \
                 SELECT ?3, type, ?4, 'queued', priority, payload, dedup_key, 0, ?5, ?6, ?6, ?6, \
                 'schedule:' || name, retry_policy \
                 FROM schedules WHERE id = ?1 AND next_run_at = ?2 AND enabled = 1 \
                 AND NOT EXISTS (SELECT 1 FROM schedule_runs WHERE schedule_id = ?1 AND due_at = ?2) \
                 ON CONFLICT DO NOTHING \
                 RETURNING id, type AS job_type, family, priority, run_at, correlation_id",
                id,
                due_at,
                job_id,
                family,
                max_attempts,
                now_ms
            )?,
            sql!(
                db,
                "INSERT INTO schedule_runs (schedule_id, due_at, fired_at, job_id, missed, skipped) \
                 SELECT id, ?2, ?3, (SELECT id FROM jobs WHERE id = ?4), ?5, \
                 IIF(EXISTS (SELECT 1 FROM jobs WHERE id = ?4), NULL, 'dedup_key_live') \
                 FROM schedules WHERE id = ?1 AND next_run_at = ?2 AND enabled = 1 \
                 ON CONFLICT DO NOTHING",
                id,
                due_at,
                now_ms,
                job_id,
                missed
            )?,
        ),
        ScheduleGate::UntaggedFeedItems => (
            sql!(
                db,
                Unsent => "INSERT INTO jobs (id, type, family, status, priority, payload, dedup_key, \
                 attempts, max_attempts, run_at, created_at, updated_at, enqueued_by, retry_policy) \
                 SELECT ?3, type, ?4, 'queued', priority, json_set(payload, '$.untagged_count', \
                 (SELECT COUNT(*) FROM (SELECT 1 FROM feed_items WHERE ai_tagged = 0 LIMIT 10000))), \
                 dedup_key, 0, ?5, ?6, ?6, ?6, 'schedule:' || name, retry_policy \
                 FROM schedules WHERE id = ?1 AND next_run_at = ?2 AND enabled = 1 \
                 AND NOT EXISTS (SELECT 1 FROM schedule_runs WHERE schedule_id = ?1 AND due_at = ?2) \
                 AND EXISTS (SELECT 1 FROM feed_items WHERE ai_tagged = 0) \
                 ON CONFLICT DO NOTHING \
                 RETURNING id, type AS job_type, family, priority, run_at, correlation_id",
                id,
                due_at,
                job_id,
                family,
                max_attempts,
                now_ms
            )?,
            sql!(
                db,
                "INSERT INTO schedule_runs (schedule_id, due_at, fired_at, job_id, missed, skipped) \
                 SELECT id, ?2, ?3, (SELECT id FROM jobs WHERE id = ?4), ?5, \
                 IIF(EXISTS (SELECT 1 FROM jobs WHERE id = ?4), NULL, \
                 IIF(EXISTS (SELECT 1 FROM feed_items WHERE ai_tagged = 0), \
                 'dedup_key_live', 'no_untagged_items')) \
                 FROM schedules WHERE id = ?1 AND next_run_at = ?2 AND enabled = 1 \
                 ON CONFLICT DO NOTHING",
                id,
                due_at,
                now_ms,
                job_id,
                missed
            )?,
        ),
    };
    let advance = sql!(
        db,
        "UPDATE schedules SET next_run_at = ?3, last_run_at = ?4, \
         missed_runs = missed_runs + ?5 WHERE id = ?1 AND next_run_at = ?2 AND enabled = 1",
        id,
        due_at,
        fire.catch_up.next_ms,
        now_ms,
        missed
    )?;
    Ok([insert_job, record, advance])
}

/// Enabled schedules late by more than the grace (due before `late_before_ms`) or that missed
/// runs since `since_ms` (rows: shared [`LateSchedule`]).
pub fn schedule_list_late(
    db: &D1Database,
    late_before_ms: i64,
    since_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    sql!(db, LateSchedule =>
        "SELECT s.name, s.next_run_at, (SELECT COALESCE(SUM(r.missed), 0) FROM schedule_runs r \
         WHERE r.schedule_id = s.id AND r.fired_at >= ?2) AS \"missed_recent!: i64\" \
         FROM schedules s WHERE s.enabled = 1 AND (s.next_run_at < ?1 OR s.id IN \
         (SELECT schedule_id FROM schedule_runs WHERE fired_at >= ?2 AND missed > 0))",
        late_before_ms,
        since_ms
    )
}

/// Each schedule's missed runs (rows: shared [`LabelledValue`]), for GET /metrics.
pub fn schedule_count_missed(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    sql!(db, LabelledValue =>
        "SELECT name AS label, missed_runs AS \"value: f64\" FROM schedules ORDER BY name")
}

/// Deletes up to `limit` run records fired before `before_ms`.
pub fn schedule_run_delete_before(
    db: &D1Database,
    before_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "DELETE FROM schedule_runs WHERE (schedule_id, due_at) IN \
         (SELECT schedule_id, due_at FROM schedule_runs WHERE fired_at < ?1 LIMIT ?2)",
        before_ms,
        limit
    )
}
