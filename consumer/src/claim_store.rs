//! SQL for a consumer batch: one round trip to claim every message's job, one to record every
//! outcome (and to read the jobs of messages that claimed nothing). Never one per message.

use jobs_shared::job::lease::{record_lost_attempts_sql, LOST_ATTEMPT};
use jobs_shared::job::stored_result::{json_arrays, MAX_ROWS_JSON_BYTES};
use jobs_shared::observe::job_event::run_outcome;
use jobs_shared::{sql_in_list, D1Stats, Decision, Family, JobError, JobStatus, PAUSED_JOB_SQL};
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, D1Result};

use crate::chain::{self, Planned};
use crate::num;

/// Messages may arrive a little before their delay ends; this much early is still "due".
const EARLY_TOLERANCE_MS: i64 = 1_000;

/// A job this batch now runs.
#[derive(Deserialize)]
pub struct Claimed {
    pub id: String,
    #[serde(rename = "type")]
    pub job_type: String,
    pub payload: String,
    pub attempts: u32,
    pub max_attempts: u32,
    pub runs: u32,
    /// Chain columns (see crate::chain); all absent outside a chain.
    pub parent_id: Option<String>,
    pub chain_step: Option<u32>,
    pub next_steps: Option<String>,
    pub chain_status: Option<String>,
    /// The enqueue request's correlation id (NULL on jobs written without one).
    pub correlation_id: Option<String>,
}

impl Claimed {
    /// The job's correlation id: the enqueue request's, or its own id for jobs that had none.
    pub fn correlation(&self) -> &str {
        self.correlation_id.as_deref().unwrap_or(&self.id)
    }
}

/// The state of a job whose message claimed nothing, to say why.
#[derive(Deserialize)]
pub struct Seen {
    pub id: String,
    pub status: String,
    pub run_at: i64,
    pub lease_until: Option<i64>,
    /// The job's family now; priority aging may have moved it to another queue.
    pub family: String,
}

/// A job a pause covers: not claimed (no attempt spent), marked held for the resume to re-send.
#[derive(Deserialize)]
pub struct Held {
    pub id: String,
}

/// A job whose lease ran out under an attempt that was its last: the claim records the lost
/// attempt and ends it `dead` instead of running it again.
#[derive(Deserialize)]
pub struct Exhausted {
    pub id: String,
    #[serde(rename = "type")]
    pub job_type: String,
    pub attempts: u32,
    pub correlation_id: Option<String>,
    /// Chain columns (see crate::chain): a dead step fails its chain.
    pub parent_id: Option<String>,
    pub chain_step: Option<u32>,
    pub chain_status: Option<String>,
}

pub struct Claim {
    pub claimed: Vec<Claimed>,
    pub held: Vec<Held>,
    pub exhausted: Vec<Exhausted>,
}

/// Moves every claimable job among `ids` to `running` (attempts + 1, a lease) in one batch.
/// Claimable: a state the state machine lets into `running`, or `running` whose lease ran out
/// (its worker died). Claiming also proves the job's message left the outbox. Only a message
/// from the job's current family's queue claims it: after a promotion the old one is stale.
/// Why a message claimed nothing is read in the second round trip (`finish`), for those ids
/// only: on the happy path there are none, and the claim returns nothing else.
/// A `running` job whose lease ran out lost its attempt: that attempt gets its run record
/// (`lease_expired`) here, and a job that has no attempt left goes `dead` rather than running
/// past its max_attempts.
/// The unary `+` on the status and run_at terms keeps SQLite on the primary key: it cannot see
/// how short a `json_each` list is and would otherwise scan the whole backlog by status.
pub async fn claim(
    db: &D1Database,
    family: Family,
    ids: &[&str],
    now_ms: i64,
    lease_until: i64,
    stats: &mut D1Stats,
) -> worker::Result<Claim> {
    let ids_json = JsValue::from_str(&serde_json::to_string(ids).unwrap_or_default());
    let claimable = sql_in_list(&jobs_shared::sources_of(JobStatus::Running));
    let family_name = JsValue::from_str(family.as_str());
    let lost =
        "id IN (SELECT value FROM json_each(?1)) AND +status = 'running' AND lease_until < ?2 \
                AND family = ?3";
    let record_lost = db.prepare(record_lost_attempts_sql("?2", lost)).bind(&[
        ids_json.clone(),
        num(now_ms),
        family_name.clone(),
    ])?;
    let exhaust = db
        .prepare(format!(
            "UPDATE jobs SET status = 'dead', finished_at = ?2, lease_until = NULL, \
             error_class = 'lease_expired', last_error = '{LOST_ATTEMPT}', updated_at = ?2, \
             escalated_at = NULL WHERE {lost} AND attempts >= max_attempts \
             RETURNING id, type, attempts, correlation_id, parent_id, chain_step, chain_status"
        ))
        .bind(&[ids_json.clone(), num(now_ms), family_name.clone()])?;
    let update = db
        .prepare(format!(
            "UPDATE jobs SET status = 'running', attempts = attempts + 1, runs = runs + 1, started_at = ?2, \
             updated_at = ?2, lease_until = ?3, sent_at = COALESCE(sent_at, ?2) \
             WHERE id IN (SELECT value FROM json_each(?1)) AND +run_at <= ?4 \
             AND (+status IN ({claimable}) OR (+status = 'running' AND lease_until < ?2)) \
             AND family = ?5 AND NOT {PAUSED_JOB_SQL} \
             RETURNING id, type, payload, attempts, max_attempts, runs, \
             parent_id, chain_step, next_steps, chain_status, correlation_id"
        ))
        .bind(&[
            ids_json.clone(),
            num(now_ms),
            num(lease_until),
            num(now_ms + EARLY_TOLERANCE_MS),
            family_name.clone(),
        ])?;
    // What a pause kept from the claim above: held (sent_at set, so the sweep leaves it be)
    // until the resume clears held_at and re-sends it.
    let hold = db
        .prepare(format!(
            "UPDATE jobs SET held_at = ?2, sent_at = ?2 \
             WHERE id IN (SELECT value FROM json_each(?1)) AND +run_at <= ?3 \
             AND (+status IN ({claimable}) OR (+status = 'running' AND lease_until < ?2)) \
             AND family = ?4 AND {PAUSED_JOB_SQL} RETURNING id"
        ))
        .bind(&[
            ids_json,
            num(now_ms),
            num(now_ms + EARLY_TOLERANCE_MS),
            family_name,
        ])?;
    let results = counted_batch(db, vec![record_lost, exhaust, update, hold], stats).await?;
    Ok(Claim {
        exhausted: results[1].results()?,
        claimed: results[2].results()?,
        held: results[3].results()?,
    })
}

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
}

/// One attempt's end, to be written.
pub struct Finished<'a> {
    pub job: &'a Claimed,
    pub started_at: i64,
    pub finished_at: i64,
    pub decision: &'a Decision,
    pub result: Option<String>,
    /// What the attempt spent, in cents (job_runs.cost_cents).
    pub cost_cents: f64,
    pub chain: &'a Planned,
}

/// The batch's second round trip: every attempt's run record and the job's next state (plus a
/// chain's next steps), and the state of the jobs in `unclaimed` (messages that claimed
/// nothing), which it returns. No round trip when there is nothing to write or read.
///
/// Outcomes are two set-based statements per kind of outcome, whatever the batch size, since
/// per-statement overhead is most of D1's cost at batch sizes. Successes, nearly every row,
/// carry only what differs between them (id, run, times, result, cost); their constant columns
/// are in the SQL, and rows are positional arrays: each field SQLite extracts from a row's JSON
/// is real work per row. Every write is guarded by (status = running, runs = this run), so an
/// attempt that lost its lease to a rescuer, or was overtaken by an operator's retry, cannot
/// overwrite the newer one. The unary `+` keeps SQLite on the primary key (see `claim`).
pub async fn finish(
    db: &D1Database,
    finished: &[Finished<'_>],
    leftovers: &Leftovers<'_>,
    stats: &mut D1Stats,
) -> worker::Result<Vec<Seen>> {
    let Leftovers {
        released,
        failed_chains,
        unclaimed,
    } = *leftovers;
    let mut succeeded = Vec::new();
    let mut failed = Vec::new();
    for f in finished {
        match f.decision {
            Decision::Succeed => succeeded.push(row(&SucceededRow::of(f))),
            Decision::Retry { error, delay_secs } => {
                let run_at = f.finished_at + i64::from(*delay_secs) * 1000;
                failed.push(row(&FailedRow::of(f, error, Some(run_at), true)));
            }
            // Held in D1 (no message in the queue) until the sweep sends one at `until_ms`.
            Decision::Hold { error, until_ms } => {
                failed.push(row(&FailedRow::of(f, error, Some(*until_ms), false)))
            }
            Decision::Dead { error } => failed.push(row(&FailedRow::of(f, error, None, true))),
        }
    }
    let mut statements = Vec::new();
    for (sql, rows) in [(&SUCCEEDED, succeeded), (&FAILED, failed)] {
        for array in json_arrays(&rows, MAX_ROWS_JSON_BYTES) {
            statements.extend(sql.statements(db, array)?);
        }
    }
    if !released.is_empty() {
        statements.push(release(db, released)?);
    }
    if !failed_chains.is_empty() {
        statements.push(fail_chains(db, failed_chains)?);
    }
    for f in finished {
        statements.extend(chain::statements(db, f.job, f.chain, f.finished_at)?);
    }
    if !unclaimed.is_empty() {
        let ids = JsValue::from_str(&serde_json::to_string(unclaimed).unwrap_or_default());
        statements.push(
            db.prepare(
                "SELECT id, status, run_at, lease_until, family FROM jobs \
                 WHERE id IN (SELECT value FROM json_each(?1))",
            )
            .bind(&[ids])?,
        );
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

/// How one kind of outcome is written: the run record's columns and the job's new state, as
/// SQL over a row array `o.value` (fields by position: 0 id, 1 run, 2 started_at,
/// 3 finished_at, the rest the kind's own).
struct OutcomeSql {
    /// job_runs columns after (job_id, run, attempt, started_at, finished_at, duration_ms).
    run_columns: &'static str,
    run_values: &'static str,
    jobs_set: &'static str,
}

/// Succeeded rows: [id, run, started_at, finished_at, result, cost_cents].
const SUCCEEDED: OutcomeSql = OutcomeSql {
    run_columns: "outcome, cost_cents",
    run_values: "'succeeded', o.value ->> 5",
    jobs_set:
        "status = 'succeeded', result = o.value ->> 4, error_class = NULL, last_error = NULL, \
               sent_at = o.value ->> 3, finished_at = o.value ->> 3",
};

/// Failed rows: [id, run, started_at, finished_at, cost_cents, outcome, error_class,
/// error_message, run_at, sent_at, finished_at or null]. The run's outcome is also the job's
/// new status (retrying or dead).
const FAILED: OutcomeSql = OutcomeSql {
    run_columns: "cost_cents, outcome, error_class, error_message",
    run_values: "o.value ->> 4, o.value ->> 5, o.value ->> 6, o.value ->> 7",
    jobs_set: "status = o.value ->> 5, result = NULL, error_class = o.value ->> 6, \
               last_error = o.value ->> 7, run_at = COALESCE(o.value ->> 8, jobs.run_at), \
               sent_at = o.value ->> 9, finished_at = o.value ->> 10",
};

impl OutcomeSql {
    /// The two statements for `rows`, a JSON array of this kind's rows.
    fn statements(
        &self,
        db: &D1Database,
        rows: String,
    ) -> worker::Result<[D1PreparedStatement; 2]> {
        let rows = JsValue::from_str(&rows);
        let (run_columns, run_values, jobs_set) =
            (self.run_columns, self.run_values, self.jobs_set);
        let runs = db
            .prepare(format!(
                "INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, duration_ms, \
                 {run_columns}) \
                 SELECT j.id, j.runs, j.attempts, o.value ->> 2, o.value ->> 3, \
                 (o.value ->> 3) - (o.value ->> 2), {run_values} \
                 FROM json_each(?1) o JOIN jobs j ON j.id = o.value ->> 0 \
                 AND +j.status = 'running' AND j.runs = o.value ->> 1"
            ))
            .bind(std::slice::from_ref(&rows))?;
        let jobs = db
            .prepare(format!(
                "UPDATE jobs SET {jobs_set}, lease_until = NULL, updated_at = o.value ->> 3, \
                 escalated_at = NULL FROM json_each(?1) o \
                 WHERE jobs.id = o.value ->> 0 AND +jobs.status = 'running' AND jobs.runs = o.value ->> 1"
            ))
            .bind(&[rows])?;
        Ok([runs, jobs])
    }
}

/// One outcome row as JSON (rows are joined into arrays that fit D1, see `finish`).
fn row(row: &impl Serialize) -> String {
    serde_json::to_string(row).unwrap_or_default()
}

/// Undoes the claim of jobs that never started: no attempt was spent on them.
fn release(db: &D1Database, jobs: &[&Claimed]) -> worker::Result<D1PreparedStatement> {
    let rows: Vec<(&str, u32)> = jobs.iter().map(|j| (j.id.as_str(), j.runs)).collect();
    let rows = JsValue::from_str(&serde_json::to_string(&rows).unwrap_or_default());
    db.prepare(
        "UPDATE jobs SET status = 'queued', attempts = attempts - 1, runs = runs - 1, \
         lease_until = NULL FROM json_each(?1) o \
         WHERE jobs.id = o.value ->> 0 AND +jobs.status = 'running' AND jobs.runs = o.value ->> 1",
    )
    .bind(&[rows])
}

/// A chain to fail because the claim found its step dead (its last attempt lost):
/// `(parent_id, message, at_ms)`.
pub type FailedChain = (String, String, i64);

/// Fails those chains, unless already ended.
fn fail_chains(db: &D1Database, chains: &[FailedChain]) -> worker::Result<D1PreparedStatement> {
    let rows = JsValue::from_str(&serde_json::to_string(chains).unwrap_or_default());
    db.prepare(
        "UPDATE jobs SET chain_status = 'failed', chain_error = o.value ->> 1, \
         updated_at = o.value ->> 2 FROM json_each(?1) o \
         WHERE jobs.id = o.value ->> 0 AND jobs.chain_status = 'running'",
    )
    .bind(&[rows])
}

/// Extends the lease of jobs a live batch is still running (the heartbeat): guarded by the
/// run, so a job another attempt took over is left alone.
pub async fn extend_leases(
    db: &D1Database,
    jobs: &[(&str, u32)],
    lease_until: i64,
    stats: &mut D1Stats,
) -> worker::Result<()> {
    let rows = JsValue::from_str(&serde_json::to_string(jobs).unwrap_or_default());
    let extend = db
        .prepare(
            "UPDATE jobs SET lease_until = ?2 FROM json_each(?1) o \
             WHERE jobs.id = o.value ->> 0 AND +jobs.status = 'running' AND jobs.runs = o.value ->> 1",
        )
        .bind(&[rows, num(lease_until)])?;
    counted_batch(db, vec![extend], stats).await.map(|_| ())
}

/// A success as the SUCCEEDED statements read it.
#[derive(Serialize)]
struct SucceededRow<'a>(&'a str, u32, i64, i64, Option<&'a str>, f64);

impl<'a> SucceededRow<'a> {
    fn of(f: &'a Finished<'_>) -> Self {
        let job = f.job;
        SucceededRow(
            &job.id,
            job.runs,
            f.started_at,
            f.finished_at,
            f.result.as_deref(),
            f.cost_cents,
        )
    }
}

/// A failure as the FAILED statements read it.
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
);

impl<'a> FailedRow<'a> {
    /// `message_in_queue`: false while no message is in the queue (sent_at stays NULL).
    fn of(
        f: &'a Finished<'_>,
        error: &'a JobError,
        run_at: Option<i64>,
        message_in_queue: bool,
    ) -> Self {
        let finished = matches!(f.decision, Decision::Dead { .. }).then_some(f.finished_at);
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
        )
    }
}

/// One D1 round trip, counted with the rows D1 says it read and wrote.
async fn counted_batch(
    db: &D1Database,
    statements: Vec<D1PreparedStatement>,
    stats: &mut D1Stats,
) -> worker::Result<Vec<D1Result>> {
    let results = db.batch(statements).await?;
    stats.add_round_trip(results.iter().map(|r| {
        r.meta()
            .ok()
            .flatten()
            .map_or((None, None), |m| (m.rows_read, m.rows_written))
    }));
    Ok(results)
}
