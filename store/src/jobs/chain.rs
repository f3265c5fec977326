//! A chain's columns on `jobs`: its steps read for GET /v1/jobs/{id}, and its moves written in
//! the batch that records a step (docs/app-guide.md "Job chains"). `chain_status` lives on the
//! chain's first job (the parent) and says `running`, `succeeded` or `failed`.

use jobs_shared::job::chain::ChainMove;
use jobs_shared::job::enqueue::NewJob;
use jobs_shared::job::lifecycle::JobStatus;
use jobs_shared::job::stored_result::MAX_ROWS_JSON_BYTES;
use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement};

use super::claim::Claimed;
use super::group::{branch_inserts, Branch};
use super::moved_by::MovedBy;
use crate::d1::json_text;

/// A step of a chain, as its parent's view lists it.
#[derive(Deserialize)]
pub struct ChainStep {
    pub id: String,
    pub job_type: String,
    pub status: String,
    pub chain_step: i64,
    pub next_steps: Option<String>,
    pub step_name: Option<String>,
    /// A group step's branches counted by status, JSON (`{"succeeded": 199, "dead": 1}`).
    pub branches: Option<String>,
    /// A wait step's event and key (`["approved","order-42"]`), and when any step is due.
    pub wait_for: Option<String>,
    pub run_at: i64,
}

/// The steps of the chain job `id` heads, in order (none unless it heads one).
pub async fn job_list_chain_steps(db: &D1Database, id: &str) -> worker::Result<Vec<ChainStep>> {
    sql!(db, ChainStep =>
        "SELECT id, type AS job_type, status, chain_step AS \"chain_step!\", next_steps, \
         step_name, IIF(type = 'group', (SELECT json_group_object(status, n) \
           FROM (SELECT b.status, COUNT(*) AS n FROM jobs b INDEXED BY jobs_group_branches \
           WHERE b.group_id IS NOT NULL AND b.group_id = jobs.id GROUP BY b.status)), NULL) \
         AS \"branches?: String\", wait_for, run_at \
         FROM jobs WHERE parent_id = ?1 ORDER BY chain_step",
        id
    )?
    .all()
    .await?
    .results()
}

/// A chain to fail because its step was found dead (its last attempt lost) or expired at the
/// claim: a row of [`job_set_chain_failed_many`]'s JSON array.
#[derive(Serialize)]
pub struct FailedChain {
    pub parent_id: String,
    pub message: String,
    pub at_ms: i64,
}

/// Fails those chains, unless already ended.
pub fn job_set_chain_failed_many(
    db: &D1Database,
    chains: &[FailedChain],
) -> worker::Result<D1PreparedStatement> {
    let chains = json_text(chains);
    sql!(
        db,
        "UPDATE jobs SET chain_status = 'failed', chain_error = o.value ->> 'message', \
         updated_at = o.value ->> 'at_ms' FROM json_each(?1) o \
         WHERE jobs.id = o.value ->> 'parent_id' AND jobs.chain_status = 'running'",
        &chains
    )
}

/// After a move by hand (`by` an operator or the app) to `to` at `now_ms`: when it ended jobs
/// unrun (cancelled or skipped), fails the chains of the steps it ended, unless already ended,
/// naming the step as a step's end does ("step N (type) was cancelled by an operator"); a move
/// to a live state ends none. The moved jobs are found through `jobs_ended` on (status,
/// finished_at), since the move set `finished_at` to `now_ms`.
pub fn job_set_chain_failed_by_move(
    db: &D1Database,
    to: JobStatus,
    now_ms: i64,
    by: MovedBy,
) -> worker::Result<Option<D1PreparedStatement>> {
    Ok(Some(match to {
        JobStatus::Cancelled => sql!(
            db,
            "UPDATE jobs SET chain_status = 'failed', chain_error = s.message, updated_at = ?1 \
             FROM (SELECT COALESCE(parent_id, id) AS root, 'step ' || COALESCE(chain_step, 0) || \
               ' (' || type || ') was ' || status || ' by ' || ?2 AS message \
               FROM jobs INDEXED BY jobs_ended WHERE finished_at IS NOT NULL \
               AND status <> 'succeeded' AND status = 'cancelled' AND finished_at = ?1 \
               AND (parent_id IS NOT NULL OR chain_status IS NOT NULL)) AS s \
             WHERE jobs.id = s.root AND jobs.chain_status = 'running'",
            now_ms,
            by.who()
        )?,
        JobStatus::Skipped => sql!(
            db,
            "UPDATE jobs SET chain_status = 'failed', chain_error = s.message, updated_at = ?1 \
             FROM (SELECT COALESCE(parent_id, id) AS root, 'step ' || COALESCE(chain_step, 0) || \
               ' (' || type || ') was ' || status || ' by ' || ?2 AS message \
               FROM jobs INDEXED BY jobs_ended WHERE finished_at IS NOT NULL \
               AND status <> 'succeeded' AND status = 'skipped' AND finished_at = ?1 \
               AND (parent_id IS NOT NULL OR chain_status IS NOT NULL)) AS s \
             WHERE jobs.id = s.root AND jobs.chain_status = 'running'",
            now_ms,
            by.who()
        )?,
        _ => return Ok(None),
    }))
}

/// A step's chain after one attempt: its move, with the next step's job when there is one,
/// and that step's branches when it is a group.
#[derive(Clone, Copy)]
pub struct ChainWrite<'a> {
    pub chain: &'a ChainMove,
    pub next: Option<&'a NewJob>,
    pub branches: &'a [Branch],
}

/// The chain's statements after one attempt of `job`, whose row was written with
/// `step_status`: the next step's job (and a group's branches) and the parent's status. Appended to the record batch
/// after the step's own UPDATE. Each is guarded by that step's row having just been written
/// (its final status, this run: `?1` id, `?2` status, `?3` run), so an attempt whose outcome
/// was not written (it lost its lease) moves nothing.
pub(super) fn statements(
    db: &D1Database,
    job: &Claimed,
    write: ChainWrite<'_>,
    step_status: &str,
    now_ms: i64,
) -> worker::Result<Vec<D1PreparedStatement>> {
    let (id, run) = (job.id.as_str(), job.runs);
    Ok(match (write.chain, write.next) {
        (
            ChainMove::Next {
                parent_id,
                index,
                rest,
                ..
            },
            Some(next),
        ) => {
            let rest =
                (!rest.is_empty()).then(|| serde_json::Value::Array(rest.clone()).to_string());
            // Chains inherit the correlation id of the request that started them, and who
            // sent that request. Its status is the next job's first (queued, or scheduled
            // when kept in D1). Its inputs are the named steps' results as their rows hold
            // them now, this step's own just written above; a name follow-ups reused takes its
            // newest step's.
            let insert = sql!(
                db,
                "INSERT OR IGNORE INTO jobs (id, type, family, status, priority, payload, \
                 attempts, max_attempts, run_at, created_at, updated_at, parent_id, chain_step, \
                 next_steps, correlation_id, retry_policy, expires_at, enqueued_by, step_name, \
                 inputs) \
                 SELECT ?4, ?5, ?6, ?7, ?8, ?9, 0, ?10, ?11, ?12, ?12, ?13, ?14, ?15, ?16, \
                 ?17, ?18, ?19, ?20, \
                 IIF(?21 IS NULL, NULL, (SELECT json_group_object(s.step_name, \
                   json(COALESCE(s.result, 'null'))) FROM jobs s \
                   WHERE (s.id = ?13 OR s.parent_id = ?13) \
                   AND s.step_name IN (SELECT value FROM json_each(?21)) \
                   AND NOT EXISTS (SELECT 1 FROM jobs t WHERE t.parent_id = ?13 \
                     AND t.step_name = s.step_name AND t.chain_step > COALESCE(s.chain_step, 0)))) \
                 WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ?1 AND status = ?2 AND runs = ?3)",
                id,
                step_status,
                run,
                next.id.as_str(),
                next.job_type.as_str(),
                next.family.as_str(),
                next.initial_status().as_str(),
                next.priority,
                next.payload.as_str(),
                next.max_attempts,
                next.run_at_ms,
                now_ms,
                parent_id.as_str(),
                *index,
                rest.as_deref(),
                job.correlation(),
                next.retry_policy.as_deref(),
                next.expires_at_ms,
                job.enqueued_by.as_deref(),
                next.name.as_deref(),
                next.inputs.as_deref()
            )?;
            // A chain a handler started, or one an operator's retry revived, runs (again).
            let running = sql!(
                db,
                "UPDATE jobs SET chain_status = 'running', chain_error = NULL, updated_at = ?4 \
                 WHERE id = ?5 \
                 AND EXISTS (SELECT 1 FROM jobs WHERE id = ?1 AND status = ?2 AND runs = ?3)",
                id,
                step_status,
                run,
                now_ms,
                parent_id.as_str()
            )?;
            let mut statements = vec![insert, running];
            if !write.branches.is_empty() {
                let (branches, max) = (write.branches, MAX_ROWS_JSON_BYTES);
                statements.extend(branch_inserts(db, job, &next.id, branches, now_ms, max)?);
            }
            statements
        }
        (ChainMove::Done { parent_id }, _) => vec![sql!(
            db,
            "UPDATE jobs SET chain_status = 'succeeded', chain_error = NULL, updated_at = ?4 \
             WHERE id = ?5 \
             AND EXISTS (SELECT 1 FROM jobs WHERE id = ?1 AND status = ?2 AND runs = ?3)",
            id,
            step_status,
            run,
            now_ms,
            parent_id.as_str()
        )?],
        (ChainMove::Failed { parent_id, message }, _) => vec![sql!(
            db,
            "UPDATE jobs SET chain_status = 'failed', chain_error = ?6, updated_at = ?4 \
             WHERE id = ?5 \
             AND EXISTS (SELECT 1 FROM jobs WHERE id = ?1 AND status = ?2 AND runs = ?3)",
            id,
            step_status,
            run,
            now_ms,
            parent_id.as_str(),
            message.as_str()
        )?],
        _ => Vec::new(),
    })
}
