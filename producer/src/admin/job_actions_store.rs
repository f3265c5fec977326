//! SQL for operator actions on jobs. Each action is ONE D1 batch: the guarded update (its
//! `status IN (...)` guard comes from the state machine), what the caller needs to answer, and
//! the audit row, so a refused or failed action writes nothing at all.

use jobs_shared::{sql_in_list, ApiError, JobStatus, Selection, SqlValue, MAX_BULK};
use serde::Deserialize;
use worker::D1Database;

use super::audit_store::{self, Entry};
use super::d1::{self, text};
use super::jobs_store::{SummaryRow, SUMMARY_COLUMNS};

/// The `SET` clause of a move to `to`. A requeue starts a fresh retry cycle (attempts 0, due
/// now, back in the outbox until the consumer claims it); `runs` and the run records stay, so
/// the job keeps its history and its next attempt gets a new run number.
fn set_clause(to: JobStatus) -> &'static str {
    match to {
        JobStatus::Queued => {
            "status = 'queued', attempts = 0, run_at = ?, updated_at = ?, sent_at = NULL, \
             held_at = NULL, lease_until = NULL, error_class = NULL, last_error = NULL, \
             result = NULL, finished_at = NULL"
        }
        // Cancelled or skipped: finished, never to run.
        _ => "status = ?, finished_at = ?, updated_at = ?, held_at = NULL, lease_until = NULL",
    }
}

fn set_values(to: JobStatus, now_ms: i64) -> Vec<SqlValue> {
    match to {
        JobStatus::Queued => vec![SqlValue::Int(now_ms), SqlValue::Int(now_ms)],
        _ => vec![
            text(to.as_str()),
            SqlValue::Int(now_ms),
            SqlValue::Int(now_ms),
        ],
    }
}

/// The jobs a selection picks among those in `sources` (the states the move may start from),
/// as SQL over `jobs`.
fn selection_sql(selection: &Selection, sources: &[JobStatus]) -> (String, Vec<SqlValue>) {
    match selection {
        Selection::Ids(ids) => (
            format!(
                "id IN (SELECT value FROM json_each(?)) AND +status IN ({})",
                sql_in_list(sources)
            ),
            vec![text(serde_json::to_string(ids).unwrap_or_default())],
        ),
        Selection::Filter(filter) => filter.to_sql(Some(sources)),
    }
}

#[derive(Deserialize)]
struct Count {
    count: i64,
}

/// How many jobs the selection would move; nothing is written.
pub async fn count(
    db: &D1Database,
    selection: &Selection,
    sources: &[JobStatus],
) -> Result<i64, ApiError> {
    let (conds, values) = selection_sql(selection, sources);
    let sql = format!("SELECT COUNT(*) AS count FROM jobs WHERE {conds}");
    let results = d1::batch(db, vec![d1::statement(db, &sql, &values)?]).await?;
    Ok(d1::rows::<Count>(&results[0])?
        .first()
        .map_or(0, |c| c.count))
}

pub struct Moved {
    pub jobs: Vec<SummaryRow>,
    /// Jobs the selection still matches beyond this request's bound (a filter over MAX_BULK).
    pub remaining: i64,
}

/// Moves up to MAX_BULK selected jobs to `to` (stable order: priority, then age), logging the
/// action, in one batch.
pub async fn move_many(
    db: &D1Database,
    selection: &Selection,
    (sources, to): (&[JobStatus], JobStatus),
    entry: &Entry<'_>,
) -> Result<Moved, ApiError> {
    let (conds, cond_values) = selection_sql(selection, sources);
    let mut values = set_values(to, entry.now_ms);
    values.extend(cond_values.iter().cloned());
    values.push(SqlValue::Int(MAX_BULK as i64));
    let update = format!(
        "UPDATE jobs SET {} WHERE id IN (SELECT id FROM jobs WHERE {conds} \
         ORDER BY priority DESC, id LIMIT ?) RETURNING {SUMMARY_COLUMNS}",
        set_clause(to)
    );
    let remaining = format!("SELECT COUNT(*) AS count FROM jobs WHERE {conds}");
    let results = d1::batch(
        db,
        vec![
            d1::statement(db, &update, &values)?,
            audit_store::after_write(db, entry, false)?,
            d1::statement(db, &remaining, &cond_values)?,
        ],
    )
    .await?;
    Ok(Moved {
        jobs: d1::rows(&results[0])?,
        remaining: d1::rows::<Count>(&results[2])?
            .first()
            .map_or(0, |c| c.count),
    })
}

#[derive(Deserialize)]
struct Prior {
    status: String,
}

/// The job's status before the action, and the job after it (None when the guard refused).
pub struct Changed {
    pub prior: Option<JobStatus>,
    pub job: Option<SummaryRow>,
}

/// One job's move, in one batch: its prior status (to explain a refusal), the guarded update,
/// and the audit row (only if it moved).
pub async fn move_one(
    db: &D1Database,
    id: &str,
    (sources, to): (&[JobStatus], JobStatus),
    entry: &Entry<'_>,
) -> Result<Changed, ApiError> {
    let sources = sql_in_list(sources);
    let mut values = set_values(to, entry.now_ms);
    values.push(text(id));
    let update = format!(
        "UPDATE jobs SET {} WHERE id = ? AND status IN ({sources}) RETURNING {SUMMARY_COLUMNS}",
        set_clause(to)
    );
    change_one(db, id, &update, &values, entry).await
}

/// Sets (`boost` false) or raises (`boost` true, capped at 100) a live job's priority.
pub async fn set_priority(
    db: &D1Database,
    id: &str,
    value: i64,
    boost: bool,
    entry: &Entry<'_>,
) -> Result<Changed, ApiError> {
    let live = sql_in_list(&JobStatus::live());
    let expr = if boost { "MIN(100, priority + ?)" } else { "?" };
    let update = format!(
        "UPDATE jobs SET priority = {expr}, updated_at = ? WHERE id = ? AND status IN ({live}) \
         RETURNING {SUMMARY_COLUMNS}"
    );
    let values = [SqlValue::Int(value), SqlValue::Int(entry.now_ms), text(id)];
    change_one(db, id, &update, &values, entry).await
}

async fn change_one(
    db: &D1Database,
    id: &str,
    update: &str,
    values: &[SqlValue],
    entry: &Entry<'_>,
) -> Result<Changed, ApiError> {
    let prior = d1::statement(db, "SELECT status FROM jobs WHERE id = ?", &[text(id)])?;
    let results = d1::batch(
        db,
        vec![
            prior,
            d1::statement(db, update, values)?,
            audit_store::after_write(db, entry, true)?,
        ],
    )
    .await?;
    Ok(Changed {
        prior: d1::rows::<Prior>(&results[0])?
            .first()
            .and_then(|p| JobStatus::parse(&p.status)),
        job: d1::rows(&results[1])?.into_iter().next(),
    })
}
