//! Reading jobs: one job as the API shows it, and the operator's filtered lists newest first
//! (ids are ULIDs: the primary key's order), paged by a cursor, so a page reads about as many
//! rows as it shows however many jobs the table holds.

use jobs_shared::api::job_filter::{JobFilter, SqlValue};
use jobs_shared::job::callback::ID_SUFFIX;
use jobs_shared::job::lifecycle::JobStatus;
use jobs_shared::runtime::queue_send::Stored;
use serde::Deserialize;
use worker::D1Database;

use super::indexes::holding;
use crate::d1::{statement, text};

/// A job row as the API shows it: its summary's columns (see [`SummaryRow`]) and the rest.
#[derive(Deserialize)]
pub struct JobRow {
    pub id: String,
    pub job_type: String,
    pub family: String,
    pub status: String,
    pub priority: i64,
    pub attempts: i64,
    pub max_attempts: i64,
    pub runs: i64,
    pub run_at: i64,
    pub created_at: i64,
    pub finished_at: Option<i64>,
    pub error_class: Option<String>,
    pub last_error: Option<String>,
    pub held_at: Option<i64>,
    pub enqueued_by: Option<String>,
    pub payload: String,
    pub dedup_key: Option<String>,
    pub result: Option<String>,
    pub updated_at: i64,
    pub started_at: Option<i64>,
    pub correlation_id: Option<String>,
    /// Its own retry policy (JSON) and expiry, as enqueue set them.
    pub retry_policy: Option<String>,
    pub expires_at: Option<i64>,
    /// Its place in a chain (docs/app-guide.md "Job chains").
    pub parent_id: Option<String>,
    pub chain_step: Option<i64>,
    pub chain_status: Option<String>,
    pub chain_error: Option<String>,
    pub next_steps: Option<String>,
    /// Its name, and a workflow step's inputs (docs/app-guide.md "Workflows").
    pub step_name: Option<String>,
    pub inputs: Option<String>,
    /// Its callback's target, and the callback job's state once D1 wrote it (docs/app-guide.md
    /// "Callbacks").
    pub callback: Option<String>,
    pub callback_delivery: Option<String>,
    /// A group's branch: its group and its place in it.
    pub group_id: Option<String>,
    pub branch: Option<i64>,
}

/// The job `id`, if there is one.
pub async fn job_get_by_id(db: &D1Database, id: &str) -> worker::Result<Option<JobRow>> {
    sql!(db, JobRow =>
        "SELECT id, type AS job_type, family, status, priority, attempts, max_attempts, runs, \
         run_at, created_at, finished_at, error_class, last_error, held_at, enqueued_by, \
         payload, dedup_key, result, updated_at, started_at, correlation_id, retry_policy, \
         expires_at, parent_id, chain_step, chain_status, chain_error, next_steps, step_name, \
         inputs, callback, (SELECT json_object('id', c.id, 'status', c.status, 'attempts', \
           c.attempts, 'error', c.last_error) FROM jobs c WHERE c.id = jobs.id || ?2) \
           AS \"callback_delivery?: String\", group_id, branch \
         FROM jobs WHERE id = ?1",
        id,
        ID_SUFFIX
    )?
    .first(None)
    .await
}

/// The columns of a [`SummaryRow`], for the statements built at run time (a list, a bulk move
/// by filter); the others write them out.
pub(super) const SUMMARY_COLUMNS: &str = "id, type AS job_type, family, status, priority, \
     attempts, max_attempts, runs, run_at, created_at, finished_at, error_class, last_error, \
     held_at, enqueued_by";

/// A job as the operator's lists and actions show it.
#[derive(Deserialize)]
pub struct SummaryRow {
    pub id: String,
    pub job_type: String,
    pub family: String,
    pub status: String,
    pub priority: i64,
    pub attempts: i64,
    pub max_attempts: i64,
    pub runs: i64,
    pub run_at: i64,
    pub created_at: i64,
    pub finished_at: Option<i64>,
    pub error_class: Option<String>,
    pub last_error: Option<String>,
    pub held_at: Option<i64>,
    pub enqueued_by: Option<String>,
}

impl SummaryRow {
    /// What its message and queue need (a requeued job's message carries no correlation id).
    pub fn stored(&self) -> Stored<'_> {
        Stored::new(&self.id, &self.job_type, &self.family, self.priority, None)
    }
}

/// A job of a list page: its summary, and on the dead-letter list how often it reached its
/// family's DLQ. Read from a statement built at run time, so not checked as a row.
#[derive(Deserialize)]
pub struct ListedRow {
    #[serde(flatten)]
    pub job: SummaryRow,
    pub dlq_arrivals: Option<i64>,
    pub dlq_last_arrived_at: Option<i64>,
}

pub struct Page<'a> {
    pub filter: &'a JobFilter,
    /// Restricts the statuses (the dead-letter list's `dead`) and adds each job's DLQ arrivals.
    pub only: Option<&'a [JobStatus]>,
    /// The id of the last job of the previous page.
    pub after: Option<String>,
    pub limit: u32,
}

/// What follows `FROM` (the table and its `WHERE`), with its values, for the jobs `filter`
/// picks among `only`'s statuses: through the partial index that holds every status it can
/// match, when one does.
pub(super) fn filtered(filter: &JobFilter, only: Option<&[JobStatus]>) -> (String, Vec<SqlValue>) {
    let (conds, values) = filter.to_sql(only);
    let rows = match holding(&filter.statuses_within(only)) {
        Some(index) => format!("{} AND {conds}", index.rows()),
        None => format!("jobs WHERE {conds}"),
    };
    (rows, values)
}

/// One page, plus one row more than `limit` when there is a next page. A filter on live
/// statuses, or on statuses that ended unsucceeded, reads their index and sorts what it holds;
/// any other walks the primary key from the newest job.
pub async fn job_list(db: &D1Database, page: &Page<'_>) -> worker::Result<Vec<ListedRow>> {
    let (mut rows, mut values) = filtered(page.filter, page.only);
    if let Some(id) = &page.after {
        rows.push_str(" AND id < ?");
        values.push(text(id.as_str()));
    }
    values.push(SqlValue::Int(i64::from(page.limit) + 1));
    let dlq = if page.only.is_some() {
        ", (SELECT COUNT(*) FROM dead_letters d WHERE d.job_id = jobs.id) AS dlq_arrivals, \
         (SELECT MAX(arrived_at) FROM dead_letters d WHERE d.job_id = jobs.id) \
         AS dlq_last_arrived_at"
    } else {
        ""
    };
    // Built at run time: the request's filter picks its conditions and index; every value bound.
    let sql = format!("SELECT {SUMMARY_COLUMNS}{dlq} FROM {rows} ORDER BY id DESC LIMIT ?");
    let results = db.batch(vec![statement(db, &sql, &values)?]).await?;
    results[0].results()
}
