//! A consumer batch's record: one round trip writes every attempt's record (a failure's run
//! record, the batch's successes in one row) and its job's next state, a chain's next move, the claims to undo, and reads the jobs of the messages
//! that claimed nothing. Never one per message.

use std::sync::LazyLock;

use jobs_shared::job::chain::ChainMove;
use jobs_shared::job::enqueue::NewJob;
use jobs_shared::job::family::Family;
use jobs_shared::job::job_outcome::Decision;
use jobs_shared::job::lifecycle::JobStatus::{Queued, Running, Succeeded};
use jobs_shared::job::run_details::{Ran, RunDetails};
use jobs_shared::job::stored_result::{json_arrays, MAX_ROWS_JSON_BYTES};
use jobs_shared::observe::d1_stats::D1Stats;
use jobs_shared::observe::job_event::run_outcome;
use jobs_shared::observe::job_minutes::MinuteTally;
use jobs_shared::retry::error_class::JobError;
use serde::Serialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use super::chain::{self, job_set_chain_failed_many, FailedChain};
use super::claim::{job_list_seen, Claimed, Seen};
use crate::d1::{counted_batch, json, num};
use crate::invocations::invocation_insert;
use crate::job_minutes::job_minute_add_many;
use crate::job_runs::job_run_insert_failed;
use crate::sql::rows_cte;
use crate::success_batches::{success_batch_insert, Success};

/// What the record writes beside the attempts' outcomes, and the jobs it reads.
#[derive(Clone, Copy, Default)]
pub struct Leftovers<'a> {
    /// Jobs claimed but never started (the batch ran out of wall time or subrequests): back to
    /// `queued` with the claim's attempt and run undone, for their messages to come back.
    pub released: &'a [&'a Claimed],
    /// The chains of steps the claim found dead.
    pub failed_chains: &'a [FailedChain],
    /// Jobs of messages that claimed nothing: their state is read, to say why.
    pub unclaimed: &'a [&'a str],
    /// The batch's attempts per family-minute, for the charts (`job_minutes`).
    pub minutes: &'a [MinuteTally],
}

/// One attempt's end, to be written.
pub struct Finished<'a> {
    pub job: &'a Claimed,
    pub started_at: i64,
    pub finished_at: i64,
    pub decision: &'a Decision,
    pub result: Option<String>,
    /// What the attempt spent, in cents (job_runs.cost_cents, or a success's jobs.run_cost_cents).
    pub cost_cents: f64,
    /// What ran it and what it produced (job_runs.details, or a success's jobs.run_details).
    pub details: &'a RunDetails,
    /// The chain's move after it, with the next step's job when there is one.
    pub chain: (&'a ChainMove, Option<&'a NewJob>),
}

/// The batch's second round trip: every attempt's record and the job's next state (plus a
/// chain's next steps), and the state of the jobs in `unclaimed` (messages that claimed
/// nothing), which it returns. No round trip when there is nothing to write or read.
///
/// Outcomes are two set-based statements per kind of outcome, whatever the batch size, since
/// per-statement overhead is most of D1's cost at batch sizes. A success writes only its job's
/// row (its run record is kept there), so it costs no row of its own beyond the batch's one. Successes, nearly every row,
/// carry only what differs between them (id, run, times, result, cost); their constant columns
/// are in the SQL, and rows are positional arrays: each field SQLite extracts from a row's JSON
/// is real work per row. Every write is guarded by (status = running, runs = this run), so an
/// attempt that lost its lease to a rescuer, or was overtaken by an operator's retry, cannot
/// overwrite the newer one. The unary `+` keeps SQLite on the primary key (see `job_claim`).
pub async fn job_set_outcome_many(
    db: &D1Database,
    family: Family,
    finished: &[Finished<'_>],
    leftovers: &Leftovers<'_>,
    stats: &mut D1Stats,
) -> worker::Result<Vec<Seen>> {
    let Leftovers {
        released,
        failed_chains,
        unclaimed,
        minutes,
    } = *leftovers;
    // The details most successes share (one handler, one invocation, nothing produced) are
    // written once per statement, not once per row.
    let shared = finished
        .iter()
        .find(|f| matches!(f.decision, Decision::Succeed))
        .map(|f| f.details);
    let mut succeeded = Vec::new();
    let mut successes = Vec::new();
    let mut failed = Vec::new();
    for f in finished {
        match f.decision {
            Decision::Succeed => {
                succeeded.push(row(&SucceededRow::of(f, shared)));
                successes.push(f);
            }
            Decision::Retry { error, delay_secs } => {
                let run_at = f.finished_at + i64::from(*delay_secs) * 1000;
                failed.push(row(&FailedRow::of(f, error, Some(run_at), true)));
            }
            // Held in D1 (no message in the queue) until the sweep sends one at `until_ms`.
            Decision::Hold { error, until_ms } => {
                failed.push(row(&FailedRow::of(f, error, Some(*until_ms), false)))
            }
            Decision::Dead { error } | Decision::Skip { error } => {
                failed.push(row(&FailedRow::of(f, error, None, true)))
            }
        }
    }
    let mut statements = Vec::new();
    // What every success shares with its invocation's runs is kept once, in `invocations`.
    if let Some(shared) = shared {
        statements.push(invocation_insert(
            db,
            &shared.invocation,
            &shared.shared_by_invocation(),
        )?);
    }
    // Whether the details carry the lease (the consumer's account of it), or the SQL reads it.
    let lease_known = num(shared.is_some_and(|d| d.lease_until.is_some()).into());
    let invocation = JsValue::from_str(shared.map_or("", |d| &d.invocation));
    let shared = json(&shared.map(|d| &d.ran));
    for (range, array) in json_arrays(&succeeded, MAX_ROWS_JSON_BYTES) {
        let rows = JsValue::from_str(&array);
        statements.push(db.prepare(&*SUCCEEDED_UPDATE).bind(&[
            rows.clone(),
            shared.clone(),
            lease_known.clone(),
            invocation.clone(),
        ])?);
        // Right after the update: it counts the rows the update changed.
        statements.push(success_batch(db, family, &rows, &successes[range])?);
    }
    for (_, array) in json_arrays(&failed, MAX_ROWS_JSON_BYTES) {
        let rows = JsValue::from_str(&array);
        statements.push(job_run_insert_failed(db, &rows, 11)?);
        statements.push(db.prepare(&*FAILED_UPDATE).bind(&[rows])?);
    }
    if !released.is_empty() {
        statements.push(release(db, released)?);
    }
    if !failed_chains.is_empty() {
        statements.push(job_set_chain_failed_many(db, failed_chains)?);
    }
    for f in finished {
        let step_status = run_outcome(f.decision);
        statements.extend(chain::statements(
            db,
            f.job,
            f.chain,
            step_status,
            f.finished_at,
        )?);
    }
    if !minutes.is_empty() {
        statements.push(job_minute_add_many(db, minutes)?);
    }
    if !unclaimed.is_empty() {
        statements.push(job_list_seen(db, unclaimed)?);
    }
    if statements.is_empty() {
        return Ok(Vec::new());
    }
    let results = counted_batch(db, statements, stats).await?;
    match (unclaimed.is_empty(), results.last()) {
        (false, Some(seen)) => seen.results(),
        _ => Ok(Vec::new()),
    }
}

/// The `success_batches` row of `successes`, whose rows are `rows`.
fn success_batch(
    db: &D1Database,
    family: Family,
    rows: &JsValue,
    successes: &[&Finished<'_>],
) -> worker::Result<D1PreparedStatement> {
    let last = successes
        .iter()
        .map(|f| f.finished_at)
        .max()
        .unwrap_or_default();
    let first = successes
        .iter()
        .map(|f| f.job.id.as_str())
        .min()
        .unwrap_or_default();
    let packed: Vec<Success> = successes
        .iter()
        .map(|f| {
            let job = f.job;
            Success(
                &job.job_type,
                f.finished_at - f.started_at,
                (job.runs == 1).then_some(f.started_at - job.created_at),
                f.finished_at - job.run_at,
            )
        })
        .collect();
    success_batch_insert(db, rows, (last, first, family.as_str()), &packed)
}

/// The jobs' update for one kind of outcome, setting `jobs_set`: SQL over a row array
/// `o.value` (?1; fields by position: 0 id, 1 run, 2 started_at, 3 finished_at, the rest the
/// kind's own, the run's details last). A failure's run records are written just before,
/// under the same guard; the successes' row just after, from what it changed. Each kind's is
/// built once per isolate: every consumer batch runs it.
fn jobs_update(jobs_set: &str) -> String {
    format!(
        "{cte} UPDATE jobs SET {jobs_set}, lease_until = NULL, updated_at = o.value ->> 3, \
         escalated_at = NULL FROM o \
         WHERE jobs.id = o.value ->> 0 AND +jobs.status = '{Running}' AND jobs.runs = o.value ->> 1",
        cte = rows_cte("?1"),
    )
}

/// Succeeded rows: [id, run, started_at, finished_at, result, cost_cents, details], details
/// (the run's own, shared `Ran`) null where they are the batch's shared ones (?2). The run's
/// record stays on the job row, with its invocation (?4), whose `invocations` row keeps the
/// rest; the batch's successes get one `success_batches` row. That row carries the lease the
/// job held when the consumer knows it (?3, nearly always); else each job's is read into its
/// details here, which costs a JSON edit per row.
static SUCCEEDED_UPDATE: LazyLock<String> = LazyLock::new(|| {
    jobs_update(&format!(
        "status = '{Succeeded}', result = o.value ->> 4, error_class = NULL, \
         last_error = NULL, sent_at = o.value ->> 3, finished_at = o.value ->> 3, \
         run_cost_cents = o.value ->> 5, \
         run_details = IIF(?3, COALESCE(o.value ->> 6, ?2), \
         json_set(COALESCE(o.value ->> 6, ?2), '$.lease_until', jobs.lease_until)), \
         run_invocation = ?4"
    ))
});

/// Failed rows: [id, run, started_at, finished_at, cost_cents, outcome, error_class,
/// error_message, run_at, sent_at, finished_at or null, details]. The run's outcome is also the
/// job's new status (retrying, dead, or skipped: a skip's reason is its error class).
static FAILED_UPDATE: LazyLock<String> = LazyLock::new(|| {
    jobs_update(
        "status = o.value ->> 5, result = NULL, error_class = o.value ->> 6, \
         last_error = o.value ->> 7, run_at = COALESCE(o.value ->> 8, jobs.run_at), \
         sent_at = o.value ->> 9, finished_at = o.value ->> 10",
    )
});

/// One outcome row as JSON (rows are joined into arrays that fit D1, see `job_set_outcome_many`).
fn row(row: &impl Serialize) -> String {
    serde_json::to_string(row).unwrap_or_default()
}

/// Undoes the claim of jobs that never started: no attempt was spent on them.
fn release(db: &D1Database, jobs: &[&Claimed]) -> worker::Result<D1PreparedStatement> {
    let rows: Vec<(&str, u32)> = jobs.iter().map(|j| (j.id.as_str(), j.runs)).collect();
    db.prepare(format!(
        "UPDATE jobs SET status = '{Queued}', attempts = attempts - 1, runs = runs - 1, \
         lease_until = NULL FROM json_each(?1) o \
         WHERE jobs.id = o.value ->> 0 AND +jobs.status = '{Running}' AND jobs.runs = o.value ->> 1"
    ))
    .bind(&[json(&rows)])
}

/// A success as the succeeded statements read it.
#[derive(Serialize)]
struct SucceededRow<'a>(
    &'a str,
    u32,
    i64,
    i64,
    Option<&'a str>,
    f64,
    Option<&'a Ran>,
);

impl<'a> SucceededRow<'a> {
    /// Its own details ([`Ran`]: what its invocation shares is kept there), left out (null)
    /// when they equal `shared`'s.
    fn of(f: &'a Finished<'_>, shared: Option<&RunDetails>) -> Self {
        let job = f.job;
        SucceededRow(
            &job.id,
            job.runs,
            f.started_at,
            f.finished_at,
            f.result.as_deref(),
            f.cost_cents,
            (Some(&f.details.ran) != shared.map(|d| &d.ran)).then_some(&f.details.ran),
        )
    }
}

/// A failure as the failed statements read it.
#[derive(Serialize)]
struct FailedRow<'a>(
    &'a str,
    u32,
    i64,
    i64,
    f64,
    &'static str,
    &'static str,
    &'a str,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    &'a RunDetails,
);

impl<'a> FailedRow<'a> {
    /// `message_in_queue`: false while no message is in the queue (sent_at stays NULL).
    fn of(
        f: &'a Finished<'_>,
        error: &'a JobError,
        run_at: Option<i64>,
        message_in_queue: bool,
    ) -> Self {
        let ended = matches!(f.decision, Decision::Dead { .. } | Decision::Skip { .. });
        let finished = ended.then_some(f.finished_at);
        FailedRow(
            &f.job.id,
            f.job.runs,
            f.started_at,
            f.finished_at,
            f.cost_cents,
            run_outcome(f.decision),
            error.class.as_str(),
            &error.message,
            run_at,
            message_in_queue.then_some(f.finished_at),
            finished,
            f.details,
        )
    }
}
