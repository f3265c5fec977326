//! Operator actions on jobs. Each action is ONE D1 batch: the guarded update (its
//! `status IN (...)` guard comes from the state machine), what the caller needs to answer, and
//! the audit row, so a refused or failed action writes nothing at all.

use jobs_shared::api::bulk_request::{Selection, MAX_BULK};
use jobs_shared::api::job_filter::SqlValue;
use jobs_shared::job::lease::SKIPPED_ATTEMPT;
use jobs_shared::job::lifecycle::JobStatus::{self, Queued, Running, Skipped};
use jobs_shared::retry::error_class::ErrorClass;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use super::chain::job_set_chain_failed_by_operator;
use super::read::{filtered, SummaryRow, SUMMARY_COLUMNS};
use crate::audit::{self, Entry};
use crate::d1::{statement, text};
use crate::job_runs::record_ended_attempts_sql;
use crate::sql::status_list;

/// The `SET` clause of a move to `to`. A requeue starts a fresh retry cycle (attempts 0, due
/// now, back in the outbox until the consumer claims it); `runs` and the run records stay, so
/// the job keeps its history and its next attempt gets a new run number.
fn set_clause(to: JobStatus) -> String {
    match to {
        JobStatus::Queued => format!(
            "status = '{Queued}', attempts = 0, run_at = ?, updated_at = ?, sent_at = NULL, \
             held_at = NULL, lease_until = NULL, error_class = NULL, last_error = NULL, \
             result = NULL, finished_at = NULL"
        ),
        // Cancelled or skipped: finished, never to run.
        _ => {
            "status = ?, finished_at = ?, updated_at = ?, held_at = NULL, lease_until = NULL".into()
        }
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

/// A move to the state a job is in (`queued` to `queued`, shared `move_sources`) is no
/// transition: it makes a job whose `run_at` is ahead due now (docs/app-guide.md "Lifecycle"). So
/// such a job is among the sources only while its `run_at` is ahead; one already due is left to its
/// message. The condition that says so, or nothing.
fn due_later(sources: &[JobStatus], to: JobStatus, now_ms: i64) -> String {
    if sources.contains(&to) {
        format!(" AND (+status <> '{to}' OR run_at > {now_ms})")
    } else {
        String::new()
    }
}

/// The jobs a selection picks among those in `sources` (the states the move to `to` may start
/// from, at `now_ms`), as what follows `FROM` (see `read::filtered`).
fn selection_sql(
    selection: &Selection,
    (sources, to): (&[JobStatus], JobStatus),
    now_ms: i64,
) -> (String, Vec<SqlValue>) {
    let (rows, values) = match selection {
        Selection::Ids(ids) => (
            format!(
                "jobs WHERE id IN (SELECT value FROM json_each(?)) AND +status IN ({})",
                status_list(sources)
            ),
            vec![text(serde_json::to_string(ids).unwrap_or_default())],
        ),
        Selection::Filter(filter) => filtered(filter, Some(sources)),
    };
    (rows + &due_later(sources, to, now_ms), values)
}

/// The live job, other than `alias` itself, holding `alias`'s (type, dedup_key): a job moved
/// back to a live state may not take a key another live job holds (`jobs_dedup_live`).
fn key_holder(alias: &str) -> String {
    let live = status_list(&JobStatus::live());
    format!(
        "(SELECT l.id FROM jobs AS l INDEXED BY jobs_dedup_live WHERE l.type = {alias}.type \
         AND l.dedup_key = {alias}.dedup_key AND l.dedup_key IS NOT NULL \
         AND l.status IN ({live}) AND l.id <> {alias}.id)"
    )
}

/// `WITH held AS (...)`: every selected job with `held_by`, the job whose hold on its dedup key
/// keeps it from moving (NULL: it may move). Of two selected jobs with one key, the first moves
/// and holds the key against the second: a live one first (it holds the key already; a
/// retried `retrying` job beside a dead one), then in the stable order. The selection's values
/// bind first.
fn held_cte(
    selection: &Selection,
    mv: (&[JobStatus], JobStatus),
    now_ms: i64,
) -> (String, Vec<SqlValue>) {
    let (rows, values) = selection_sql(selection, mv, now_ms);
    let holder = key_holder("p");
    let live = status_list(&JobStatus::live());
    let sql = format!(
        "WITH picked AS (SELECT id, type, dedup_key, priority, \
         ROW_NUMBER() OVER (PARTITION BY type, dedup_key \
           ORDER BY status IN ({live}) DESC, priority DESC, id) AS nth \
         FROM {rows}), \
         held AS (SELECT p.id, p.priority, COALESCE({holder}, CASE WHEN p.dedup_key IS NOT NULL \
         AND p.nth > 1 THEN (SELECT f.id FROM picked f WHERE f.type = p.type \
         AND f.dedup_key = p.dedup_key AND f.nth = 1) END) AS held_by FROM picked p) "
    );
    (sql, values)
}

#[derive(Deserialize)]
struct Count {
    count: i64,
}

/// A selected job that stays where it is: another live job holds its dedup key.
#[derive(Deserialize)]
pub struct Conflict {
    pub id: String,
    pub held_by: String,
}

/// How many selected jobs would move, and how many would not (their dedup key is held);
/// nothing is written.
pub async fn job_count_movable(
    db: &D1Database,
    selection: &Selection,
    mv: (&[JobStatus], JobStatus),
    now_ms: i64,
) -> worker::Result<(i64, i64)> {
    let (held, values) = held_cte(selection, mv, now_ms);
    let sql = format!(
        "{held}SELECT COUNT(*) FILTER (WHERE held_by IS NULL) AS count, \
         COUNT(*) FILTER (WHERE held_by IS NOT NULL) AS conflicts FROM held"
    );
    #[derive(Deserialize)]
    struct Counts {
        count: i64,
        conflicts: i64,
    }
    let results = db.batch(vec![statement(db, &sql, &values)?]).await?;
    Ok(results[0]
        .results::<Counts>()?
        .first()
        .map_or((0, 0), |c| (c.count, c.conflicts)))
}

pub struct Moved {
    pub jobs: Vec<SummaryRow>,
    /// Selected jobs left where they were because another live job holds their dedup key
    /// (at most MAX_BULK of them).
    pub conflicts: Vec<Conflict>,
    /// Jobs that could move beyond this request's bound (a filter over MAX_BULK).
    pub remaining: i64,
}

/// Moves up to MAX_BULK selected jobs to `to` (stable order: priority, then age), logging the
/// action, in one batch. A job whose dedup key another live job holds does not move and is
/// named in `conflicts`, so one taken key never fails the others, and `remaining` counts only
/// jobs that could move: repeating the request while it is above 0 ends.
pub async fn job_move_many(
    db: &D1Database,
    selection: &Selection,
    (sources, to): (&[JobStatus], JobStatus),
    entry: &Entry<'_>,
) -> worker::Result<Moved> {
    let (held, held_values) = held_cte(selection, (sources, to), entry.now_ms);
    let limit = [SqlValue::Int(MAX_BULK as i64)];
    // The jobs that move: the first MAX_BULK free to, in the stable order.
    let moved =
        "id IN (SELECT id FROM held WHERE held_by IS NULL ORDER BY priority DESC, id LIMIT ?)";
    let values = [&held_values[..], &set_values(to, entry.now_ms), &limit].concat();
    let update = format!(
        "{held}UPDATE jobs SET {} WHERE {moved} RETURNING {SUMMARY_COLUMNS}",
        set_clause(to)
    );
    let conflict_values = [&held_values[..], &limit].concat();
    // Read before the update, in the same transaction: the conflicts it leaves behind.
    let conflicts = format!(
        "{held}SELECT id, held_by FROM held WHERE held_by IS NOT NULL \
         ORDER BY priority DESC, id LIMIT ?"
    );
    let remaining = format!("{held}SELECT COUNT(*) AS count FROM held WHERE held_by IS NULL");
    let ended = attempts_ended(db, to, (&held, &held_values), (moved, &limit), entry.now_ms)?;
    let mut statements = vec![statement(db, &conflicts, &conflict_values)?];
    let at = statements.len() + usize::from(ended.is_some());
    statements.extend(ended);
    statements.extend([
        statement(db, &update, &values)?,
        audit::audit_insert_after_write(db, entry, false)?,
        statement(db, &remaining, &held_values)?,
    ]);
    statements.extend(chains_ended(db, to, entry.now_ms)?);
    let results = db.batch(statements).await?;
    Ok(Moved {
        conflicts: results[0].results()?,
        jobs: results[at].results()?,
        remaining: results[at + 2]
            .results::<Count>()?
            .first()
            .map_or(0, |c| c.count),
    })
}

/// A move to `skipped` ends the attempt each running job it moves is in: that attempt's run
/// record (outcome `skipped`, class `operator`; who skipped it is in the audit log, which
/// enqueue tokens do not read), written just before the move, while the jobs are still
/// running. `moved` is the WHERE clause over `jobs` the move's jobs satisfy, after `prefix` (a
/// `WITH` clause or nothing); each with its values.
fn attempts_ended(
    db: &D1Database,
    to: JobStatus,
    (prefix, prefix_values): (&str, &[SqlValue]),
    (moved, moved_values): (&str, &[SqlValue]),
    now_ms: i64,
) -> worker::Result<Option<D1PreparedStatement>> {
    if to != Skipped {
        return Ok(None);
    }
    let record = record_ended_attempts_sql(
        &now_ms.to_string(),
        &format!("+status = '{Running}' AND {moved}"),
        (
            &format!("'{Skipped}'"),
            ErrorClass::Operator,
            SKIPPED_ATTEMPT,
        ),
        "'{}'",
    );
    let values = [prefix_values, moved_values].concat();
    Ok(Some(statement(db, &format!("{prefix}{record}"), &values)?))
}

#[derive(Deserialize)]
struct Prior {
    status: String,
    priority: i64,
    held_by: Option<String>,
}

/// The job's status before the action, and the job after it (None when the guard refused).
pub struct Changed {
    pub prior: Option<JobStatus>,
    /// Its priority before the action (a raise may move it to its family's express lane).
    pub prior_priority: Option<i64>,
    /// Another live job holding the job's dedup key before the action (a move to a live state
    /// is refused then).
    pub held_by: Option<String>,
    pub job: Option<SummaryRow>,
}

/// One job's move, in one batch: its prior status (to explain a refusal), the guarded update,
/// and the audit row (only if it moved).
pub async fn job_move_one(
    db: &D1Database,
    id: &str,
    (sources, to): (&[JobStatus], JobStatus),
    entry: &Entry<'_>,
) -> worker::Result<Changed> {
    let due_later = due_later(sources, to, entry.now_ms);
    let sources = status_list(sources);
    let mut values = set_values(to, entry.now_ms);
    values.push(text(id));
    // A move back to a live state must not take a dedup key another live job holds.
    let key_free = if to.is_live() {
        format!("AND NOT EXISTS {}", key_holder("jobs"))
    } else {
        String::new()
    };
    let update = format!(
        "UPDATE jobs SET {} WHERE id = ? AND status IN ({sources}){due_later} {key_free} \
         RETURNING {SUMMARY_COLUMNS}",
        set_clause(to)
    );
    let ended = attempts_ended(db, to, ("", &[]), ("id = ?", &[text(id)]), entry.now_ms)?;
    let chains = chains_ended(db, to, entry.now_ms)?;
    change_one(db, id, (ended, &update, &values), entry, chains).await
}

/// A move that ends jobs unrun (cancelled, skipped) fails the chains they are steps of, in the
/// move's batch.
fn chains_ended(
    db: &D1Database,
    to: JobStatus,
    now_ms: i64,
) -> worker::Result<Option<D1PreparedStatement>> {
    (!to.is_live())
        .then(|| job_set_chain_failed_by_operator(db, to, now_ms))
        .transpose()
}

/// Sets (`boost` false) or raises (`boost` true, capped at 100) a live job's priority.
pub async fn job_set_priority(
    db: &D1Database,
    id: &str,
    value: i64,
    boost: bool,
    entry: &Entry<'_>,
) -> worker::Result<Changed> {
    let live = status_list(&JobStatus::live());
    let expr = if boost { "MIN(100, priority + ?)" } else { "?" };
    let update = format!(
        "UPDATE jobs SET priority = {expr}, updated_at = ? WHERE id = ? AND status IN ({live}) \
         RETURNING {SUMMARY_COLUMNS}"
    );
    let values = [SqlValue::Int(value), SqlValue::Int(entry.now_ms), text(id)];
    change_one(db, id, (None, &update, &values), entry, None).await
}

/// One job's change in one batch: its prior state, `before` (a statement that must see the job
/// as it was), the guarded `update`, the audit row, and `then` (a statement that follows from
/// the change).
async fn change_one(
    db: &D1Database,
    id: &str,
    (before, update, values): (Option<D1PreparedStatement>, &str, &[SqlValue]),
    entry: &Entry<'_>,
    then: Option<D1PreparedStatement>,
) -> worker::Result<Changed> {
    let prior = statement(
        db,
        &format!(
            "SELECT j.status, j.priority, {} AS held_by FROM jobs AS j WHERE j.id = ?",
            key_holder("j")
        ),
        &[text(id)],
    )?;
    let at = 1 + usize::from(before.is_some());
    let mut statements = vec![prior];
    statements.extend(before);
    statements.extend([
        statement(db, update, values)?,
        audit::audit_insert_after_write(db, entry, true)?,
    ]);
    statements.extend(then);
    let results = db.batch(statements).await?;
    let prior = results[0].results::<Prior>()?.into_iter().next();
    Ok(Changed {
        held_by: prior.as_ref().and_then(|p| p.held_by.clone()),
        prior_priority: prior.as_ref().map(|p| p.priority),
        prior: prior.and_then(|p| JobStatus::parse(&p.status)),
        job: results[at].results()?.into_iter().next(),
    })
}
