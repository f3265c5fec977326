//! Lease rescue: a `running` job whose lease ran out lost its worker. The sweep's
//! `job_rescuer` reads a page of them, decides each one's move (shared `after_lost_attempt`),
//! and writes the moves here: the lost attempts' run records (`lease_expired`), the jobs'
//! moves, and the chains their dead steps fail.

use jobs_shared::job::chain::ChainColumns;
use jobs_shared::job::lifecycle::JobStatus::{self, Dead, Running};
use jobs_shared::job::run_details::FOUND_BY_SWEEP;
use jobs_shared::retry::error_class::ErrorClass::LeaseExpired;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use super::chain::{CHAIN_FAILED, CHAIN_RUNNING};
use super::indexes::UNFINISHED;
use super::{Unsent, UNSENT_COLUMNS};
use crate::d1::{json, num};
use crate::job_runs::record_lost_attempts_sql;

/// A running job whose lease ran out, as the rescuer reads it.
#[derive(Deserialize)]
pub struct Expired {
    pub id: String,
    #[serde(rename = "type")]
    pub job_type: String,
    pub attempts: u32,
    pub max_attempts: u32,
    pub runs: u32,
    /// A dead step fails its chain.
    #[serde(flatten)]
    pub chain: ChainColumns,
}

/// Up to `limit` jobs whose lease ran out by `now_ms`, the longest expired first. Read among
/// live jobs due by then (a running job was due when claimed, and claimed before its lease).
pub async fn job_list_expired(
    db: &D1Database,
    now_ms: i64,
    limit: u32,
) -> worker::Result<Vec<Expired>> {
    let live = UNFINISHED.rows();
    db.prepare(format!(
        "SELECT id, type, attempts, max_attempts, runs, parent_id, chain_step, chain_status \
         FROM {live} AND run_at < ?1 AND status = '{Running}' AND lease_until < ?1 \
         ORDER BY lease_until LIMIT ?2"
    ))
    .bind(&[num(now_ms), num(limit.into())])?
    .all()
    .await?
    .results()
}

/// An expired job's move, decided by the rescuer.
pub struct LostMove<'a> {
    pub id: &'a str,
    /// The run that lost its lease (the write is guarded by it).
    pub run: u32,
    pub status: JobStatus,
    pub run_at: i64,
    pub finished_at: Option<i64>,
    pub last_error: &'a str,
}

/// A chain the rescue fails because its step `step_id` is dead.
pub struct DeadStepChain<'a> {
    pub parent_id: String,
    pub message: String,
    pub step_id: &'a str,
}

/// A job the rescue moved, as it returns it.
#[derive(Deserialize)]
pub struct Rescued {
    #[serde(flatten)]
    pub job: Unsent,
    pub status: String,
    pub attempts: u32,
    pub started_at: Option<i64>,
}

/// The rescue of one page at `now_ms`, three statements: the lost attempts' run records, each
/// job's move (rows: [`Rescued`]; guarded by its run, so a job a consumer's claim took
/// meanwhile is left alone), and, after the moves, the chains whose step went dead.
pub fn job_rescue_many(
    db: &D1Database,
    now_ms: i64,
    moves: &[LostMove],
    chains: &[DeadStepChain],
) -> worker::Result<[D1PreparedStatement; 3]> {
    // Rows: [id, run, status, run_at, finished_at, last_error].
    let moves: Vec<_> = moves
        .iter()
        .map(|m| {
            let status = m.status.as_str();
            (m.id, m.run, status, m.run_at, m.finished_at, m.last_error)
        })
        .collect();
    let moves = json(&moves);
    let lost = format!(
        "id IN (SELECT o.value ->> 0 FROM json_each(?2) o WHERE o.value ->> 1 = jobs.runs) \
         AND status = '{Running}' AND lease_until < ?1"
    );
    let record_run = db
        .prepare(record_lost_attempts_sql(
            "?1",
            &lost,
            &format!("'{FOUND_BY_SWEEP}'"),
        ))
        .bind(&[num(now_ms), moves.clone()])?;
    let release = db
        .prepare(format!(
            "UPDATE jobs SET status = o.value ->> 2, run_at = o.value ->> 3, \
             finished_at = o.value ->> 4, last_error = o.value ->> 5, lease_until = NULL, \
             sent_at = NULL, error_class = '{LeaseExpired}', updated_at = ?1, escalated_at = NULL \
             FROM json_each(?2) o WHERE jobs.id = o.value ->> 0 AND jobs.runs = o.value ->> 1 \
             AND +jobs.status = '{Running}' AND jobs.lease_until < ?1 \
             RETURNING {UNSENT_COLUMNS}, status, attempts, started_at"
        ))
        .bind(&[num(now_ms), moves])?;
    // Rows: [parent_id, message, step_id].
    let chains: Vec<_> = chains
        .iter()
        .map(|c| (&c.parent_id, &c.message, c.step_id))
        .collect();
    let fail_chains = db
        .prepare(format!(
            "UPDATE jobs SET chain_status = '{CHAIN_FAILED}', chain_error = o.value ->> 1, \
             updated_at = ?1 FROM json_each(?2) o \
             WHERE jobs.id = o.value ->> 0 AND jobs.chain_status = '{CHAIN_RUNNING}' \
             AND EXISTS (SELECT 1 FROM jobs s WHERE s.id = o.value ->> 2 AND s.status = '{Dead}')"
        ))
        .bind(&[num(now_ms), json(&chains)])?;
    Ok([record_run, release, fail_chains])
}
