//! Operator actions on jobs. Each action is ONE D1 batch: the guarded update (its states
//! written out: a move's are shared `move_sources`), what the caller needs to answer, and the
//! audit row, so a refused or failed action writes nothing at all. Each move has its own
//! statements; a bulk move by filter builds its selection at run time.

use jobs_shared::api::bulk_request::{Selection, MAX_BULK};
use jobs_shared::api::job_filter::{JobFilter, SqlValue};
use jobs_shared::api::operator_action::move_sources;
use jobs_shared::job::lease::SKIPPED_ATTEMPT;
use jobs_shared::job::lifecycle::JobStatus;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use super::chain::job_set_chain_failed_by_move;
use super::moved_by::MovedBy;
use super::read::{filtered, SummaryRow, SUMMARY_COLUMNS};
use crate::audit::{self, Entry};
use crate::d1::{json_text, statement, text};

/// A bulk move's bound: the most jobs one request moves.
const BULK_LIMIT: i64 = MAX_BULK as i64;

/// An operator's move: where it takes jobs and from which states ([`OperatorMove::sources`],
/// which its statements write out). A requeue starts a fresh retry cycle (attempts 0, due now,
/// back in the outbox until the consumer claims it); `runs` and the run records stay, so the
/// job keeps its history and its next attempt gets a new run number. A cancel or skip
/// finishes the job, never to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperatorMove {
    /// Requeue (retry, or set status `queued`).
    Retry,
    /// Requeue a dead job (the dead-letter replay).
    Replay,
    Cancel,
    Skip,
}

impl OperatorMove {
    /// The move to `to`, an operator's target (shared `OPERATOR_TARGETS`); none for a state
    /// only the consumer sets.
    pub fn for_target(to: JobStatus) -> Option<OperatorMove> {
        [Self::Retry, Self::Cancel, Self::Skip]
            .into_iter()
            .find(|mv| mv.to() == to)
    }

    /// Where it takes jobs.
    pub fn to(self) -> JobStatus {
        match self {
            Self::Retry | Self::Replay => JobStatus::Queued,
            Self::Cancel => JobStatus::Cancelled,
            Self::Skip => JobStatus::Skipped,
        }
    }

    /// The states it moves jobs from: shared `move_sources` (a move to the state a job is in,
    /// a retry of a `queued` job, only while its `run_at` is ahead: docs/app-guide.md
    /// "Lifecycle"), a replay's `dead` alone.
    pub fn sources(self) -> Vec<JobStatus> {
        match self {
            Self::Replay => vec![JobStatus::Dead],
            _ => move_sources(self.to()),
        }
    }
}

/// A selected job that stays where it is: another live job holds its dedup key.
#[derive(Deserialize)]
pub struct Conflict {
    pub id: String,
    pub held_by: String,
}

/// How many selected jobs would move, and how many would not (their dedup key is held).
#[derive(Deserialize)]
struct Counts {
    count: i64,
    conflicts: i64,
}

/// How many selected jobs would move, and how many would not (their dedup key is held);
/// nothing is written.
pub async fn job_count_movable(
    db: &D1Database,
    selection: &Selection,
    mv: OperatorMove,
    now_ms: i64,
) -> worker::Result<(i64, i64)> {
    let count = match selection {
        Selection::Ids(ids) => {
            let ids = json_text(ids);
            count_by_ids(db, &Picked::new(&ids, mv, now_ms))?
        }
        Selection::Filter(filter) => BulkByFilter::new(filter, mv, now_ms).count(db)?,
    };
    let results = db.batch(vec![count]).await?;
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

/// Moves up to MAX_BULK selected jobs (stable order: priority, then age), logging the action,
/// in one batch. Of two selected jobs with one dedup key, the first moves and holds the key
/// against the second: a live one first (it holds the key already; a retried `retrying` job
/// beside a dead one), then in the stable order. A job whose dedup key another live job holds
/// does not move and is named in `conflicts` (read before the update, in the same
/// transaction), so one taken key never fails the others, and `remaining` counts only jobs
/// that could move: repeating the request while it is above 0 ends.
pub async fn job_move_many(
    db: &D1Database,
    selection: &Selection,
    mv: OperatorMove,
    entry: &Entry<'_>,
) -> worker::Result<Moved> {
    let now_ms = entry.now_ms;
    let (conflicts, ended, update, remaining) = match selection {
        Selection::Ids(ids) => {
            let ids = json_text(ids);
            let picked = Picked::new(&ids, mv, now_ms);
            let ended = match mv {
                OperatorMove::Skip => Some(skip_ended_by_ids(db, &ids, now_ms)?),
                _ => None,
            };
            (
                conflicts_by_ids(db, &picked)?,
                ended,
                update_by_ids(db, &ids, mv, now_ms)?,
                count_by_ids(db, &picked)?,
            )
        }
        Selection::Filter(filter) => {
            let by = BulkByFilter::new(filter, mv, now_ms);
            (
                by.conflicts(db)?,
                by.ended(db)?,
                by.update(db)?,
                by.count(db)?,
            )
        }
    };
    let mut statements = vec![conflicts];
    let at = statements.len() + usize::from(ended.is_some());
    statements.extend(ended);
    statements.extend([
        update,
        audit::audit_insert_after_write(db, entry, false)?,
        remaining,
    ]);
    statements.extend(job_set_chain_failed_by_move(
        db,
        mv.to(),
        now_ms,
        MovedBy::Operator,
    )?);
    let results = db.batch(statements).await?;
    Ok(Moved {
        conflicts: results[0].results()?,
        jobs: results[at].results()?,
        remaining: results[at + 2]
            .results::<Counts>()?
            .first()
            .map_or(0, |c| c.count),
    })
}

/// A bulk move's statements over the jobs a request's filter picks among the move's sources,
/// each beginning `WITH picked ..., held ...`: every selected job with `held_by`, the job whose
/// hold on its dedup key keeps it from moving (NULL: it may move; see [`job_move_many`]).
/// Built at run time: the filter picks the conditions and the index (`read::filtered`); every
/// value bound, the selection's first.
struct BulkByFilter {
    mv: OperatorMove,
    now_ms: i64,
    held: String,
    values: Vec<SqlValue>,
}

impl BulkByFilter {
    fn new(filter: &JobFilter, mv: OperatorMove, now_ms: i64) -> BulkByFilter {
        // Built at run time: the request's filter picks its conditions and index; every value bound.
        let (rows, mut values) = filtered(filter, Some(&mv.sources()));
        // A retry takes a queued job only while its run_at is ahead.
        let due_later = if mv == OperatorMove::Retry {
            values.push(SqlValue::Int(now_ms));
            " AND (+status <> 'queued' OR run_at > ?)"
        } else {
            ""
        };
        let held = format!(
            "WITH picked AS (SELECT id, type, dedup_key, priority, \
             ROW_NUMBER() OVER (PARTITION BY type, dedup_key \
             ORDER BY status IN ('scheduled', 'queued', 'running', 'retrying') DESC, priority DESC, id) AS nth \
             FROM {rows}{due_later}), \
             held AS (SELECT p.id, p.priority, COALESCE((SELECT l.id FROM jobs AS l \
             INDEXED BY jobs_dedup_live WHERE l.type = p.type AND l.dedup_key = p.dedup_key \
             AND l.dedup_key IS NOT NULL AND l.status IN ('scheduled', 'queued', 'running', 'retrying') \
             AND l.id <> p.id), CASE WHEN p.dedup_key IS NOT NULL AND p.nth > 1 \
             THEN (SELECT f.id FROM picked f WHERE f.type = p.type \
             AND f.dedup_key = p.dedup_key AND f.nth = 1) END) AS held_by FROM picked p) "
        );
        BulkByFilter {
            mv,
            now_ms,
            held,
            values,
        }
    }

    /// The selection's values, then `more`.
    fn values(&self, more: &[SqlValue]) -> Vec<SqlValue> {
        [&self.values[..], more].concat()
    }

    /// How many would move, and how many would not (rows: `count`, `conflicts`).
    fn count(&self, db: &D1Database) -> worker::Result<D1PreparedStatement> {
        let sql = format!(
            "{}SELECT COUNT(*) FILTER (WHERE held_by IS NULL) AS count, \
             COUNT(*) FILTER (WHERE held_by IS NOT NULL) AS conflicts FROM held",
            self.held
        );
        statement(db, &sql, &self.values)
    }

    /// The conflicts (rows: [`Conflict`]).
    fn conflicts(&self, db: &D1Database) -> worker::Result<D1PreparedStatement> {
        let sql = format!(
            "{}SELECT id, held_by FROM held WHERE held_by IS NOT NULL \
             ORDER BY priority DESC, id LIMIT ?",
            self.held
        );
        statement(db, &sql, &self.values(&[SqlValue::Int(BULK_LIMIT)]))
    }

    /// The move (rows: [`SummaryRow`]): the first MAX_BULK free to, in the stable order, its
    /// guard repeating the move's states.
    fn update(&self, db: &D1Database) -> worker::Result<D1PreparedStatement> {
        let (now, limit) = (SqlValue::Int(self.now_ms), SqlValue::Int(BULK_LIMIT));
        let (sql, values) = match self.mv {
            OperatorMove::Retry => (
                format!(
                    "{}UPDATE jobs SET status = 'queued', attempts = 0, run_at = ?, \
                     updated_at = ?, sent_at = NULL, held_at = NULL, lease_until = NULL, \
                     error_class = NULL, last_error = NULL, result = NULL, finished_at = NULL \
                     WHERE id IN (SELECT id FROM held WHERE held_by IS NULL \
                     ORDER BY priority DESC, id LIMIT ?) \
                     AND (+status IN ('scheduled', 'dead', 'retrying') \
                     OR (+status = 'queued' AND run_at > ?)) RETURNING {SUMMARY_COLUMNS}",
                    self.held
                ),
                self.values(&[now.clone(), now.clone(), limit, now]),
            ),
            OperatorMove::Replay => (
                format!(
                    "{}UPDATE jobs SET status = 'queued', attempts = 0, run_at = ?, \
                     updated_at = ?, sent_at = NULL, held_at = NULL, lease_until = NULL, \
                     error_class = NULL, last_error = NULL, result = NULL, finished_at = NULL \
                     WHERE id IN (SELECT id FROM held WHERE held_by IS NULL \
                     ORDER BY priority DESC, id LIMIT ?) \
                     AND +status = 'dead' RETURNING {SUMMARY_COLUMNS}",
                    self.held
                ),
                self.values(&[now.clone(), now, limit]),
            ),
            OperatorMove::Cancel => (
                format!(
                    "{}UPDATE jobs SET status = 'cancelled', finished_at = ?, updated_at = ?, \
                     held_at = NULL, lease_until = NULL \
                     WHERE id IN (SELECT id FROM held WHERE held_by IS NULL \
                     ORDER BY priority DESC, id LIMIT ?) \
                     AND +status IN ('scheduled', 'queued', 'retrying') \
                     RETURNING {SUMMARY_COLUMNS}",
                    self.held
                ),
                self.values(&[now.clone(), now, limit]),
            ),
            OperatorMove::Skip => (
                format!(
                    "{}UPDATE jobs SET status = 'skipped', finished_at = ?, updated_at = ?, \
                     held_at = NULL, lease_until = NULL \
                     WHERE id IN (SELECT id FROM held WHERE held_by IS NULL \
                     ORDER BY priority DESC, id LIMIT ?) \
                     AND +status IN ('scheduled', 'queued', 'running', 'retrying') \
                     RETURNING {SUMMARY_COLUMNS}",
                    self.held
                ),
                self.values(&[now.clone(), now, limit]),
            ),
        };
        statement(db, &sql, &values)
    }

    /// A skip's run records of the attempts it ends (see [`skip_ended_by_ids`]).
    fn ended(&self, db: &D1Database) -> worker::Result<Option<D1PreparedStatement>> {
        if self.mv != OperatorMove::Skip {
            return Ok(None);
        }
        let now = SqlValue::Int(self.now_ms);
        let sql = format!(
            "{}INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, outcome, \
             error_class, error_message, duration_ms, details) \
             SELECT id, runs, attempts, COALESCE(started_at, ?), ?, 'skipped', 'operator', ?, \
             ? - COALESCE(started_at, ?), json_set('{{}}', '$.lease_until', lease_until) \
             FROM jobs WHERE +status = 'running' AND id IN (SELECT id FROM held \
             WHERE held_by IS NULL ORDER BY priority DESC, id LIMIT ?) ON CONFLICT DO NOTHING",
            self.held
        );
        let values = self.values(&[
            now.clone(),
            now.clone(),
            text(SKIPPED_ATTEMPT),
            now.clone(),
            now,
            SqlValue::Int(BULK_LIMIT),
        ]);
        statement(db, &sql, &values).map(Some)
    }
}

/// A move to `skipped` ends the attempt each running job it moves is in: that attempt's run
/// record (outcome `skipped`, class `operator`; who skipped it is in the audit log, which
/// enqueue tokens do not read), written just before the move, while the jobs are still
/// running. Of the jobs `ids` names, those the move takes.
fn skip_ended_by_ids(
    db: &D1Database,
    ids: &str,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "WITH picked AS (SELECT id, type, dedup_key, priority, \
         ROW_NUMBER() OVER (PARTITION BY type, dedup_key \
         ORDER BY status IN ('scheduled', 'queued', 'running', 'retrying') DESC, priority DESC, id) AS nth \
         FROM jobs WHERE id IN (SELECT value FROM json_each(?1)) \
         AND +status IN ('scheduled', 'queued', 'running', 'retrying')), \
         held AS (SELECT p.id, p.priority, COALESCE((SELECT l.id FROM jobs AS l \
         INDEXED BY jobs_dedup_live WHERE l.type = p.type AND l.dedup_key = p.dedup_key \
         AND l.dedup_key IS NOT NULL AND l.status IN ('scheduled', 'queued', 'running', 'retrying') \
         AND l.id <> p.id), CASE WHEN p.dedup_key IS NOT NULL AND p.nth > 1 \
         THEN (SELECT f.id FROM picked f WHERE f.type = p.type \
         AND f.dedup_key = p.dedup_key AND f.nth = 1) END) AS held_by FROM picked p) \
         INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, outcome, \
         error_class, error_message, duration_ms, details) \
         SELECT id, runs, attempts, COALESCE(started_at, ?2), ?2, 'skipped', 'operator', ?4, \
         ?2 - COALESCE(started_at, ?2), json_set('{}', '$.lease_until', lease_until) \
         FROM jobs WHERE +status = 'running' AND id IN (SELECT id FROM held \
         WHERE held_by IS NULL ORDER BY priority DESC, id LIMIT ?3) ON CONFLICT DO NOTHING",
        ids,
        now_ms,
        BULK_LIMIT,
        SKIPPED_ATTEMPT
    )
}

/// The jobs `ids` names in the move's states (bound: `Picked`) and, for each, the job that holds
/// its dedup key (`held_by`): a live one, else the first picked of its key (live first, then by
/// priority and id). The `WITH` of [`count_by_ids`] and [`conflicts_by_ids`], then `$select` of
/// `held`.
macro_rules! held_by_ids {
    ($db:expr, $row:path => $select:literal $(, $arg:expr)* $(,)?) => {
        sql!($db, $row =>
            "WITH picked AS (SELECT id, type, dedup_key, priority, \
            ROW_NUMBER() OVER (PARTITION BY type, dedup_key \
            ORDER BY status IN ('scheduled', 'queued', 'running', 'retrying') DESC, priority DESC, id) AS nth \
            FROM jobs WHERE id IN (SELECT value FROM json_each(?1)) \
            AND +status IN (SELECT value FROM json_each(?3)) \
            AND (?4 = 0 OR +status <> 'queued' OR run_at > ?2)), \
            held AS (SELECT p.id, p.priority, COALESCE((SELECT l.id FROM jobs AS l \
            INDEXED BY jobs_dedup_live WHERE l.type = p.type AND l.dedup_key = p.dedup_key \
            AND l.dedup_key IS NOT NULL AND l.status IN ('scheduled', 'queued', 'running', 'retrying') \
            AND l.id <> p.id), CASE WHEN p.dedup_key IS NOT NULL AND p.nth > 1 \
            THEN (SELECT f.id FROM picked f WHERE f.type = p.type \
            AND f.dedup_key = p.dedup_key AND f.nth = 1) END) AS held_by FROM picked p) "
                + $select
                + ""
            $(, $arg)*
        )
    };
}

/// The selected jobs `ids` names that `mv` would move, and those it would not (their dedup
/// key is held): [`job_count_movable`], and [`job_move_many`]'s remaining. It writes nothing,
/// so the move's states are bound ([`Picked`]), not written out.
fn count_by_ids(db: &D1Database, picked: &Picked) -> worker::Result<D1PreparedStatement> {
    held_by_ids!(db, Counts =>
        "SELECT COUNT(*) FILTER (WHERE held_by IS NULL) AS \"count!: i64\", \
         COUNT(*) FILTER (WHERE held_by IS NOT NULL) AS \"conflicts!: i64\" FROM held",
        picked.ids,
        picked.now_ms,
        &picked.sources,
        picked.due_later_only
    )
}

/// [`job_move_many`]'s conflicts among the jobs `ids` names (the move's states bound, as in
/// [`count_by_ids`]).
fn conflicts_by_ids(db: &D1Database, picked: &Picked) -> worker::Result<D1PreparedStatement> {
    held_by_ids!(db, Conflict =>
        "SELECT id, held_by AS \"held_by!: String\" FROM held WHERE held_by IS NOT NULL \
         ORDER BY priority DESC, id LIMIT ?5",
        picked.ids,
        picked.now_ms,
        &picked.sources,
        picked.due_later_only,
        BULK_LIMIT
    )
}

/// The jobs a bulk move by ids picks: those `ids` names in one of the move's states (its
/// sources, as a JSON list), a `queued` one only while its `run_at` is after `now_ms` when
/// `due_later_only` (a retry's).
struct Picked<'a> {
    ids: &'a str,
    now_ms: i64,
    sources: String,
    due_later_only: bool,
}

impl<'a> Picked<'a> {
    fn new(ids: &'a str, mv: OperatorMove, now_ms: i64) -> Picked<'a> {
        let sources: Vec<&str> = mv.sources().iter().map(|s| s.as_str()).collect();
        Picked {
            ids,
            now_ms,
            sources: serde_json::to_string(&sources).unwrap_or_default(),
            due_later_only: mv == OperatorMove::Retry,
        }
    }
}

/// [`job_move_many`]'s update of the jobs `ids` names (rows: [`SummaryRow`]), its guard
/// repeating the selection's states.
fn update_by_ids(
    db: &D1Database,
    ids: &str,
    mv: OperatorMove,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    Ok(match mv {
        OperatorMove::Retry => sql!(db, SummaryRow =>
            "WITH picked AS (SELECT id, type, dedup_key, priority, \
             ROW_NUMBER() OVER (PARTITION BY type, dedup_key \
             ORDER BY status IN ('scheduled', 'queued', 'running', 'retrying') DESC, priority DESC, id) AS nth \
             FROM jobs WHERE id IN (SELECT value FROM json_each(?1)) \
             AND (+status IN ('scheduled', 'dead', 'retrying') \
             OR (+status = 'queued' AND run_at > ?2))), \
             held AS (SELECT p.id, p.priority, COALESCE((SELECT l.id FROM jobs AS l \
             INDEXED BY jobs_dedup_live WHERE l.type = p.type AND l.dedup_key = p.dedup_key \
             AND l.dedup_key IS NOT NULL AND l.status IN ('scheduled', 'queued', 'running', 'retrying') \
             AND l.id <> p.id), CASE WHEN p.dedup_key IS NOT NULL AND p.nth > 1 \
             THEN (SELECT f.id FROM picked f WHERE f.type = p.type \
             AND f.dedup_key = p.dedup_key AND f.nth = 1) END) AS held_by FROM picked p) \
             UPDATE jobs SET status = 'queued', attempts = 0, run_at = ?2, updated_at = ?2, \
             sent_at = NULL, held_at = NULL, lease_until = NULL, error_class = NULL, \
             last_error = NULL, result = NULL, finished_at = NULL \
             WHERE id IN (SELECT id FROM held WHERE held_by IS NULL ORDER BY priority DESC, id LIMIT ?3) \
             AND (+status IN ('scheduled', 'dead', 'retrying') \
             OR (+status = 'queued' AND run_at > ?2)) \
             RETURNING id, type AS job_type, family, status, priority, attempts, max_attempts, \
             runs, run_at, created_at, finished_at, error_class, last_error, held_at, enqueued_by",
            ids,
            now_ms,
            BULK_LIMIT
        )?,
        OperatorMove::Replay => sql!(db, SummaryRow =>
            "WITH picked AS (SELECT id, type, dedup_key, priority, \
             ROW_NUMBER() OVER (PARTITION BY type, dedup_key \
             ORDER BY status IN ('scheduled', 'queued', 'running', 'retrying') DESC, priority DESC, id) AS nth \
             FROM jobs WHERE id IN (SELECT value FROM json_each(?1)) \
             AND +status = 'dead'), \
             held AS (SELECT p.id, p.priority, COALESCE((SELECT l.id FROM jobs AS l \
             INDEXED BY jobs_dedup_live WHERE l.type = p.type AND l.dedup_key = p.dedup_key \
             AND l.dedup_key IS NOT NULL AND l.status IN ('scheduled', 'queued', 'running', 'retrying') \
             AND l.id <> p.id), CASE WHEN p.dedup_key IS NOT NULL AND p.nth > 1 \
             THEN (SELECT f.id FROM picked f WHERE f.type = p.type \
             AND f.dedup_key = p.dedup_key AND f.nth = 1) END) AS held_by FROM picked p) \
             UPDATE jobs SET status = 'queued', attempts = 0, run_at = ?2, updated_at = ?2, \
             sent_at = NULL, held_at = NULL, lease_until = NULL, error_class = NULL, \
             last_error = NULL, result = NULL, finished_at = NULL \
             WHERE id IN (SELECT id FROM held WHERE held_by IS NULL ORDER BY priority DESC, id LIMIT ?3) \
             AND +status = 'dead' \
             RETURNING id, type AS job_type, family, status, priority, attempts, max_attempts, \
             runs, run_at, created_at, finished_at, error_class, last_error, held_at, enqueued_by",
            ids,
            now_ms,
            BULK_LIMIT
        )?,
        OperatorMove::Cancel => sql!(db, SummaryRow =>
            "WITH picked AS (SELECT id, type, dedup_key, priority, \
             ROW_NUMBER() OVER (PARTITION BY type, dedup_key \
             ORDER BY status IN ('scheduled', 'queued', 'running', 'retrying') DESC, priority DESC, id) AS nth \
             FROM jobs WHERE id IN (SELECT value FROM json_each(?1)) \
             AND +status IN ('scheduled', 'queued', 'retrying')), \
             held AS (SELECT p.id, p.priority, COALESCE((SELECT l.id FROM jobs AS l \
             INDEXED BY jobs_dedup_live WHERE l.type = p.type AND l.dedup_key = p.dedup_key \
             AND l.dedup_key IS NOT NULL AND l.status IN ('scheduled', 'queued', 'running', 'retrying') \
             AND l.id <> p.id), CASE WHEN p.dedup_key IS NOT NULL AND p.nth > 1 \
             THEN (SELECT f.id FROM picked f WHERE f.type = p.type \
             AND f.dedup_key = p.dedup_key AND f.nth = 1) END) AS held_by FROM picked p) \
             UPDATE jobs SET status = 'cancelled', finished_at = ?2, updated_at = ?2, \
             held_at = NULL, lease_until = NULL \
             WHERE id IN (SELECT id FROM held WHERE held_by IS NULL ORDER BY priority DESC, id LIMIT ?3) \
             AND +status IN ('scheduled', 'queued', 'retrying') \
             RETURNING id, type AS job_type, family, status, priority, attempts, max_attempts, \
             runs, run_at, created_at, finished_at, error_class, last_error, held_at, enqueued_by",
            ids,
            now_ms,
            BULK_LIMIT
        )?,
        OperatorMove::Skip => sql!(db, SummaryRow =>
            "WITH picked AS (SELECT id, type, dedup_key, priority, \
             ROW_NUMBER() OVER (PARTITION BY type, dedup_key \
             ORDER BY status IN ('scheduled', 'queued', 'running', 'retrying') DESC, priority DESC, id) AS nth \
             FROM jobs WHERE id IN (SELECT value FROM json_each(?1)) \
             AND +status IN ('scheduled', 'queued', 'running', 'retrying')), \
             held AS (SELECT p.id, p.priority, COALESCE((SELECT l.id FROM jobs AS l \
             INDEXED BY jobs_dedup_live WHERE l.type = p.type AND l.dedup_key = p.dedup_key \
             AND l.dedup_key IS NOT NULL AND l.status IN ('scheduled', 'queued', 'running', 'retrying') \
             AND l.id <> p.id), CASE WHEN p.dedup_key IS NOT NULL AND p.nth > 1 \
             THEN (SELECT f.id FROM picked f WHERE f.type = p.type \
             AND f.dedup_key = p.dedup_key AND f.nth = 1) END) AS held_by FROM picked p) \
             UPDATE jobs SET status = 'skipped', finished_at = ?2, updated_at = ?2, \
             held_at = NULL, lease_until = NULL \
             WHERE id IN (SELECT id FROM held WHERE held_by IS NULL ORDER BY priority DESC, id LIMIT ?3) \
             AND +status IN ('scheduled', 'queued', 'running', 'retrying') \
             RETURNING id, type AS job_type, family, status, priority, attempts, max_attempts, \
             runs, run_at, created_at, finished_at, error_class, last_error, held_at, enqueued_by",
            ids,
            now_ms,
            BULK_LIMIT
        )?,
    })
}

/// A job's state before an action.
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
/// and the audit row (only if it moved). A move back to a live state must not take a dedup
/// key another live job holds (`jobs_dedup_live`); a skip ends the running attempt's record
/// first (see [`skip_ended_by_ids`]); a cancel or skip fails the chains of the steps it ends.
pub async fn job_move_one(
    db: &D1Database,
    id: &str,
    mv: OperatorMove,
    by: MovedBy,
    entry: &Entry<'_>,
) -> worker::Result<Changed> {
    let now_ms = entry.now_ms;
    let (before, update) = match mv {
        OperatorMove::Retry => (
            None,
            sql!(db, SummaryRow =>
                "UPDATE jobs SET status = 'queued', attempts = 0, run_at = ?1, updated_at = ?1, \
                 sent_at = NULL, held_at = NULL, lease_until = NULL, error_class = NULL, \
                 last_error = NULL, result = NULL, finished_at = NULL \
                 WHERE id = ?2 AND (status IN ('scheduled', 'dead', 'retrying') \
                 OR (status = 'queued' AND run_at > ?1)) \
                 AND NOT EXISTS (SELECT l.id FROM jobs AS l INDEXED BY jobs_dedup_live \
                 WHERE l.type = jobs.type AND l.dedup_key = jobs.dedup_key \
                 AND l.dedup_key IS NOT NULL \
                 AND l.status IN ('scheduled', 'queued', 'running', 'retrying') \
                 AND l.id <> jobs.id) \
                 RETURNING id, type AS job_type, family, status, priority, attempts, \
                 max_attempts, runs, run_at, created_at, finished_at, error_class, last_error, \
                 held_at, enqueued_by",
                now_ms,
                id
            )?,
        ),
        OperatorMove::Replay => (
            None,
            sql!(db, SummaryRow =>
                "UPDATE jobs SET status = 'queued', attempts = 0, run_at = ?1, updated_at = ?1, \
                 sent_at = NULL, held_at = NULL, lease_until = NULL, error_class = NULL, \
                 last_error = NULL, result = NULL, finished_at = NULL \
                 WHERE id = ?2 AND status = 'dead' \
                 AND NOT EXISTS (SELECT l.id FROM jobs AS l INDEXED BY jobs_dedup_live \
                 WHERE l.type = jobs.type AND l.dedup_key = jobs.dedup_key \
                 AND l.dedup_key IS NOT NULL \
                 AND l.status IN ('scheduled', 'queued', 'running', 'retrying') \
                 AND l.id <> jobs.id) \
                 RETURNING id, type AS job_type, family, status, priority, attempts, \
                 max_attempts, runs, run_at, created_at, finished_at, error_class, last_error, \
                 held_at, enqueued_by",
                now_ms,
                id
            )?,
        ),
        OperatorMove::Cancel => (
            None,
            sql!(db, SummaryRow =>
                "UPDATE jobs SET status = 'cancelled', finished_at = ?1, updated_at = ?1, \
                 held_at = NULL, lease_until = NULL \
                 WHERE id = ?2 AND status IN ('scheduled', 'queued', 'retrying') \
                 RETURNING id, type AS job_type, family, status, priority, attempts, \
                 max_attempts, runs, run_at, created_at, finished_at, error_class, last_error, \
                 held_at, enqueued_by",
                now_ms,
                id
            )?,
        ),
        OperatorMove::Skip => (
            Some(sql!(
                db,
                "INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, outcome, \
                 error_class, error_message, duration_ms, details) \
                 SELECT id, runs, attempts, COALESCE(started_at, ?1), ?1, 'skipped', 'operator', \
                 ?3, ?1 - COALESCE(started_at, ?1), json_set('{}', '$.lease_until', lease_until) \
                 FROM jobs WHERE +status = 'running' AND id = ?2 ON CONFLICT DO NOTHING",
                now_ms,
                id,
                by.ended_attempt()
            )?),
            sql!(db, SummaryRow =>
                "UPDATE jobs SET status = 'skipped', finished_at = ?1, updated_at = ?1, \
                 held_at = NULL, lease_until = NULL \
                 WHERE id = ?2 AND status IN ('scheduled', 'queued', 'running', 'retrying') \
                 RETURNING id, type AS job_type, family, status, priority, attempts, \
                 max_attempts, runs, run_at, created_at, finished_at, error_class, last_error, \
                 held_at, enqueued_by",
                now_ms,
                id
            )?,
        ),
    };
    let change = OneChange {
        before,
        update,
        then: job_set_chain_failed_by_move(db, mv.to(), now_ms, by)?,
    };
    change_one(db, id, change, entry).await
}

/// Sets (`boost` false) or raises (`boost` true, capped at 100) a live job's priority.
pub async fn job_set_priority(
    db: &D1Database,
    id: &str,
    value: i64,
    boost: bool,
    entry: &Entry<'_>,
) -> worker::Result<Changed> {
    let update = if boost {
        sql!(db, SummaryRow =>
            "UPDATE jobs SET priority = MIN(100, priority + ?1), updated_at = ?2 \
             WHERE id = ?3 AND status IN ('scheduled', 'queued', 'running', 'retrying') \
             RETURNING id, type AS job_type, family, status, priority, attempts, max_attempts, \
             runs, run_at, created_at, finished_at, error_class, last_error, held_at, enqueued_by",
            value,
            entry.now_ms,
            id
        )?
    } else {
        sql!(db, SummaryRow =>
            "UPDATE jobs SET priority = ?1, updated_at = ?2 \
             WHERE id = ?3 AND status IN ('scheduled', 'queued', 'running', 'retrying') \
             RETURNING id, type AS job_type, family, status, priority, attempts, max_attempts, \
             runs, run_at, created_at, finished_at, error_class, last_error, held_at, enqueued_by",
            value,
            entry.now_ms,
            id
        )?
    };
    let change = OneChange {
        before: None,
        update,
        then: None,
    };
    change_one(db, id, change, entry).await
}

/// One job's change: `before` (a statement that must see the job as it was), the guarded
/// `update` (rows: [`SummaryRow`]), and `then` (a statement that follows from the change).
struct OneChange {
    before: Option<D1PreparedStatement>,
    update: D1PreparedStatement,
    then: Option<D1PreparedStatement>,
}

/// One job's change in one batch: its prior state, the change's statements around the audit
/// row (after the update).
async fn change_one(
    db: &D1Database,
    id: &str,
    change: OneChange,
    entry: &Entry<'_>,
) -> worker::Result<Changed> {
    let prior = sql!(db, Prior =>
        "SELECT j.status, j.priority, (SELECT l.id FROM jobs AS l INDEXED BY jobs_dedup_live \
         WHERE l.type = j.type AND l.dedup_key = j.dedup_key AND l.dedup_key IS NOT NULL \
         AND l.status IN ('scheduled', 'queued', 'running', 'retrying') AND l.id <> j.id) \
         AS \"held_by?: String\" FROM jobs AS j WHERE j.id = ?1",
        id
    )?;
    let at = 1 + usize::from(change.before.is_some());
    let mut statements = vec![prior];
    statements.extend(change.before);
    statements.extend([
        change.update,
        audit::audit_insert_after_write(db, entry, true)?,
    ]);
    statements.extend(change.then);
    let results = db.batch(statements).await?;
    let prior = results[0].results::<Prior>()?.into_iter().next();
    Ok(Changed {
        held_by: prior.as_ref().and_then(|p| p.held_by.clone()),
        prior_priority: prior.as_ref().map(|p| p.priority),
        prior: prior.and_then(|p| JobStatus::parse(&p.status)),
        job: results[at].results()?.into_iter().next(),
    })
}

#[cfg(test)]
mod tests {
    use super::OperatorMove;
    use crate::sql::written;

    /// Each move's statements write out the states shared `move_sources` gives it.
    #[test]
    fn each_move_s_statements_name_its_sources() {
        let source = written(include_str!("operator.rs"));
        for (mv, names) in [
            (OperatorMove::Retry, "('scheduled', 'dead', 'retrying')"),
            (OperatorMove::Cancel, "('scheduled', 'queued', 'retrying')"),
            (
                OperatorMove::Skip,
                "('scheduled', 'queued', 'running', 'retrying')",
            ),
        ] {
            let mut sources: Vec<String> = mv.sources().iter().map(|s| format!("'{s}'")).collect();
            sources.sort();
            let mut written: Vec<String> = names
                .trim_matches(|c| c == '(' || c == ')')
                .split(", ")
                .map(String::from)
                .collect();
            if mv == OperatorMove::Retry {
                // A queued job only while its run_at is ahead.
                assert!(source.contains("OR (+status = 'queued' AND run_at > ?2))"));
                assert!(source.contains("OR (status = 'queued' AND run_at > ?1))"));
                written.push("'queued'".into());
            }
            written.sort();
            assert_eq!(sources, written, "{mv:?}");
            assert!(source.contains(&format!("status IN {names}")), "{mv:?}");
        }
        assert_eq!(
            OperatorMove::Replay.sources(),
            [jobs_shared::job::lifecycle::JobStatus::Dead]
        );
    }
}
