//! SQL for a consumer batch: one round trip to claim every message's job, one to record every
//! outcome. Never one per message.

use jobs_shared::{sql_in_list, D1Stats, Decision, Family, JobStatus, PAUSED_JOB_SQL};
use serde::Deserialize;
use serde_json::{json, Value};
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

/// A job's state as it was before the claim, to explain each message that claimed nothing.
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

pub struct Claim {
    pub claimed: Vec<Claimed>,
    pub seen: Vec<Seen>,
    pub held: Vec<Held>,
}

/// Moves every claimable job among `ids` to `running` (attempts + 1, a lease) in one batch.
/// Claimable: a state the state machine lets into `running`, or `running` whose lease ran out
/// (its worker died). Claiming also proves the job's message left the outbox. Only a message
/// from the job's current family's queue claims it: after a promotion the old one is stale.
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
    let seen = db
        .prepare("SELECT id, status, run_at, lease_until, family FROM jobs WHERE id IN (SELECT value FROM json_each(?1))")
        .bind(std::slice::from_ref(&ids_json))?;
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
    let results = counted_batch(db, vec![seen, update, hold], stats).await?;
    Ok(Claim {
        seen: results[0].results()?,
        claimed: results[1].results()?,
        held: results[2].results()?,
    })
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

/// Writes every attempt's run record and the job's next state: two set-based statements for the
/// whole batch (plus a chain's next steps), whatever its size, since per-statement overhead is
/// most of D1's cost at batch sizes. Both are guarded by (status = running, runs = this run), so
/// an attempt that lost its lease to a rescuer, or was overtaken by an operator's retry, cannot
/// overwrite the newer one. The unary `+` keeps SQLite on the primary key (see `claim`).
pub async fn record(
    db: &D1Database,
    finished: &[Finished<'_>],
    stats: &mut D1Stats,
) -> worker::Result<()> {
    let rows: Vec<Value> = finished.iter().map(outcome_row).collect();
    let rows = JsValue::from_str(&Value::Array(rows).to_string());
    let mut statements = vec![
        db.prepare(
            "INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, outcome, \
             error_class, error_message, duration_ms, cost_cents) \
             SELECT j.id, j.runs, j.attempts, o.value ->> 'started_at', o.value ->> 'finished_at', \
             o.value ->> 'outcome', o.value ->> 'error_class', o.value ->> 'error_message', \
             o.value ->> 'duration_ms', o.value ->> 'cost_cents' \
             FROM json_each(?1) o JOIN jobs j ON j.id = o.value ->> 'id' \
             AND +j.status = 'running' AND j.runs = o.value ->> 'run'",
        )
        .bind(std::slice::from_ref(&rows))?,
        db.prepare(
            "UPDATE jobs SET status = o.value ->> 'status', result = o.value ->> 'result', \
             error_class = o.value ->> 'error_class', last_error = o.value ->> 'error_message', \
             run_at = COALESCE(o.value ->> 'run_at', jobs.run_at), sent_at = o.value ->> 'sent_at', \
             finished_at = o.value ->> 'finished', lease_until = NULL, \
             updated_at = o.value ->> 'finished_at', escalated_at = NULL \
             FROM json_each(?1) o \
             WHERE jobs.id = o.value ->> 'id' AND +jobs.status = 'running' AND jobs.runs = o.value ->> 'run'",
        )
        .bind(&[rows])?,
    ];
    for f in finished {
        statements.extend(chain::statements(db, f.job, f.chain, f.finished_at)?);
    }
    counted_batch(db, statements, stats).await?;
    Ok(())
}

/// One attempt's outcome as the JSON object the record statements read.
fn outcome_row(f: &Finished<'_>) -> Value {
    let outcome = Outcome::of(f.decision, f.finished_at);
    json!({
        "id": f.job.id,
        "run": f.job.runs,
        "started_at": f.started_at,
        "finished_at": f.finished_at,
        "duration_ms": f.finished_at - f.started_at,
        "cost_cents": f.cost_cents,
        "outcome": outcome.run,
        "status": outcome.status.as_str(),
        "result": f.result,
        "error_class": outcome.error_class,
        "error_message": outcome.error_message,
        "run_at": outcome.run_at,
        "sent_at": outcome.sent_at(f.finished_at),
        "finished": outcome.finished.then_some(f.finished_at),
    })
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

/// How a decision reads in the two tables.
struct Outcome {
    status: JobStatus,
    run: &'static str,
    error_class: Option<&'static str>,
    error_message: Option<String>,
    run_at: Option<i64>,
    /// false while a message is not in the queue (held in D1 until the sweep sends one).
    message_in_queue: bool,
    finished: bool,
}

impl Outcome {
    fn of(decision: &Decision, now_ms: i64) -> Outcome {
        match decision {
            Decision::Succeed => Outcome {
                status: JobStatus::Succeeded,
                run: "succeeded",
                error_class: None,
                error_message: None,
                run_at: None,
                message_in_queue: true,
                finished: true,
            },
            Decision::Retry { error, delay_secs } => Outcome {
                status: JobStatus::Retrying,
                run: "retrying",
                error_class: Some(error.class.as_str()),
                error_message: Some(error.message.clone()),
                run_at: Some(now_ms + i64::from(*delay_secs) * 1000),
                message_in_queue: true,
                finished: false,
            },
            Decision::Hold { error, until_ms } => Outcome {
                status: JobStatus::Retrying,
                run: "retrying",
                error_class: Some(error.class.as_str()),
                error_message: Some(error.message.clone()),
                run_at: Some(*until_ms),
                message_in_queue: false,
                finished: false,
            },
            Decision::Dead { error } => Outcome {
                status: JobStatus::Dead,
                run: "dead",
                error_class: Some(error.class.as_str()),
                error_message: Some(error.message.clone()),
                run_at: None,
                message_in_queue: true,
                finished: true,
            },
        }
    }

    fn sent_at(&self, now_ms: i64) -> Option<i64> {
        self.message_in_queue.then_some(now_ms)
    }
}
