//! Lease rescue: a `running` job whose lease ran out lost its worker. The sweep's
//! `job_rescuer` reads a page of them, decides each one's move (shared `after_lost_attempt`),
//! and writes the moves here: the lost attempts' run records (`lease_expired`), the jobs'
//! moves, and the chains their dead steps fail.

use jobs_shared::job::chain::ChainColumns;
use jobs_shared::job::lease::LOST_ATTEMPT;
use jobs_shared::job::lifecycle::JobStatus;
use jobs_shared::job::run_details::FOUND_BY_SWEEP;
use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement};

use super::unsent::Unsent;
use crate::d1::json_text;

/// A running job whose lease ran out, as the rescuer reads it.
#[derive(Deserialize)]
pub struct Expired {
    pub id: String,
    pub job_type: String,
    pub attempts: u32,
    pub max_attempts: u32,
    pub runs: u32,
    pub parent_id: Option<String>,
    pub chain_step: Option<u32>,
    pub chain_status: Option<String>,
}

impl Expired {
    /// Its place in a chain: a dead step fails its chain.
    pub fn chain(&self) -> ChainColumns {
        ChainColumns {
            parent_id: self.parent_id.clone(),
            chain_step: self.chain_step,
            chain_status: self.chain_status.clone(),
        }
    }
}

/// Up to `limit` jobs whose lease ran out by `now_ms`, the longest expired first. Read among
/// live jobs due by then (a running job was due when claimed, and claimed before its lease),
/// through `jobs_unfinished`.
pub async fn job_list_expired(
    db: &D1Database,
    now_ms: i64,
    limit: u32,
) -> worker::Result<Vec<Expired>> {
    sql!(db, Expired =>
        "SELECT id, type AS job_type, attempts, max_attempts, runs, parent_id, chain_step, \
         chain_status FROM jobs INDEXED BY jobs_unfinished WHERE finished_at IS NULL \
         AND run_at < ?1 AND status = 'running' AND lease_until < ?1 \
         ORDER BY lease_until LIMIT ?2",
        now_ms,
        limit
    )?
    .all()
    .await?
    .results()
}

/// An expired job's move, decided by the rescuer: a row of [`job_rescue_many`]'s JSON array.
#[derive(Serialize)]
pub struct LostMove<'a> {
    pub id: &'a str,
    /// The run that lost its lease (the write is guarded by it).
    pub run: u32,
    /// `queued` (due again at `run_at`) or `dead` (it was its last attempt).
    pub status: JobStatus,
    pub run_at: i64,
    pub finished_at: Option<i64>,
    pub last_error: &'a str,
}

/// A chain the rescue fails because its step `step_id` is dead: a row of its JSON array.
#[derive(Serialize)]
pub struct DeadStepChain<'a> {
    pub parent_id: String,
    pub message: String,
    pub step_id: &'a str,
}

/// A job the rescue moved, as it returns it.
#[derive(Deserialize)]
pub struct Rescued {
    pub id: String,
    pub job_type: String,
    pub family: String,
    pub priority: i64,
    pub run_at: i64,
    pub correlation_id: Option<String>,
    pub status: String,
    pub attempts: u32,
    pub started_at: Option<i64>,
}

impl Rescued {
    /// The job, to be sent.
    pub fn unsent(&self) -> Unsent {
        Unsent {
            id: self.id.clone(),
            job_type: self.job_type.clone(),
            family: self.family.clone(),
            priority: self.priority,
            run_at: self.run_at,
            correlation_id: self.correlation_id.clone(),
        }
    }
}

/// The rescue of one page at `now_ms`, three statements: the lost attempts' run records
/// (`FOUND_BY_SWEEP`, with the lease the attempt held), each job's move (rows: [`Rescued`];
/// guarded by its run, so a job a consumer's claim took meanwhile is left alone), and, after
/// the moves, the chains whose step went dead. A move to anything but `queued` or `dead`
/// writes no status, which its column refuses: the batch fails.
pub fn job_rescue_many(
    db: &D1Database,
    now_ms: i64,
    moves: &[LostMove],
    chains: &[DeadStepChain],
) -> worker::Result<[D1PreparedStatement; 3]> {
    let moves = json_text(moves);
    let record_run = sql!(
        db,
        "INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, outcome, \
         error_class, error_message, duration_ms, details) \
         SELECT id, runs, attempts, COALESCE(started_at, ?1), ?1, \
         CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'retrying' END, 'lease_expired', \
         ?3, ?1 - COALESCE(started_at, ?1), json_set(?4, '$.lease_until', lease_until) \
         FROM jobs WHERE id IN (SELECT o.value ->> 'id' FROM json_each(?2) o \
         WHERE o.value ->> 'run' = jobs.runs) AND status = 'running' AND lease_until < ?1 \
         ON CONFLICT DO NOTHING",
        now_ms,
        &moves,
        LOST_ATTEMPT,
        FOUND_BY_SWEEP
    )?;
    let release = sql!(db, Rescued =>
        "UPDATE jobs SET \
         status = CASE o.value ->> 'status' WHEN 'queued' THEN 'queued' WHEN 'dead' THEN 'dead' END, \
         run_at = o.value ->> 'run_at', finished_at = o.value ->> 'finished_at', \
         last_error = o.value ->> 'last_error', lease_until = NULL, sent_at = NULL, \
         error_class = 'lease_expired', updated_at = ?1, escalated_at = NULL \
         FROM json_each(?2) o WHERE jobs.id = o.value ->> 'id' AND jobs.runs = o.value ->> 'run' \
         AND +jobs.status = 'running' AND jobs.lease_until < ?1 \
         RETURNING id, type AS job_type, family, priority, run_at, correlation_id, status, \
         attempts, started_at",
        now_ms,
        &moves
    )?;
    let chains = json_text(chains);
    let fail_chains = sql!(
        db,
        "UPDATE jobs SET chain_status = 'failed', chain_error = o.value ->> 'message', \
         updated_at = ?1 FROM json_each(?2) o \
         WHERE jobs.id = o.value ->> 'parent_id' AND jobs.chain_status = 'running' \
         AND EXISTS (SELECT 1 FROM jobs s WHERE s.id = o.value ->> 'step_id' \
         AND s.status = 'dead')",
        now_ms,
        &chains
    )?;
    Ok([record_run, release, fail_chains])
}
