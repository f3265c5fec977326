//! A chain's columns on `jobs`: its steps read for GET /v1/jobs/{id}, and its moves written in
//! the batch that records a step (docs/app-guide.md "Job chains"). `chain_status` lives on the
//! chain's first job (the parent) and says `running`, `succeeded` or `failed`.

use jobs_shared::job::chain::ChainMove;
use jobs_shared::job::enqueue::NewJob;
use jobs_shared::job::lifecycle::JobStatus;
use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use super::claim::Claimed;
use super::indexes::ENDED;
use crate::d1::{json, num, opt_str};

/// A chain's `chain_status` values.
pub(crate) const CHAIN_RUNNING: &str = "running";
pub(crate) const CHAIN_SUCCEEDED: &str = "succeeded";
pub(crate) const CHAIN_FAILED: &str = "failed";

/// A step of a chain, as its parent's view lists it.
#[derive(Deserialize)]
pub struct ChainStep {
    pub id: String,
    #[serde(rename = "type")]
    pub job_type: String,
    pub status: String,
    pub chain_step: i64,
    pub next_steps: Option<String>,
}

/// The steps of the chain job `id` heads, in order (none unless it heads one).
pub async fn job_list_chain_steps(db: &D1Database, id: &str) -> worker::Result<Vec<ChainStep>> {
    db.prepare(
        "SELECT id, type, status, chain_step, next_steps FROM jobs WHERE parent_id = ?1 \
         ORDER BY chain_step",
    )
    .bind(&[id.into()])?
    .all()
    .await?
    .results()
}

/// A chain to fail because its step was found dead (its last attempt lost):
/// `(parent_id, message, at_ms)`.
pub type FailedChain = (String, String, i64);

/// Fails those chains, unless already ended.
pub fn job_set_chain_failed_many(
    db: &D1Database,
    chains: &[FailedChain],
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "UPDATE jobs SET chain_status = '{CHAIN_FAILED}', chain_error = o.value ->> 1, \
         updated_at = o.value ->> 2 FROM json_each(?1) o \
         WHERE jobs.id = o.value ->> 0 AND jobs.chain_status = '{CHAIN_RUNNING}'"
    ))
    .bind(&[json(chains)])
}

/// Fails the chains of the steps an operator's move just ended as `to` (cancelled or skipped)
/// at `now_ms`, unless already ended, naming the step as a step's end does ("step N (type) was
/// cancelled by an operator"). The moved jobs are found through `jobs_ended` on (status,
/// finished_at), since the move set `finished_at` to `now_ms`.
pub fn job_set_chain_failed_by_operator(
    db: &D1Database,
    to: JobStatus,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    let ended = ENDED.rows();
    db.prepare(format!(
        "UPDATE jobs SET chain_status = '{CHAIN_FAILED}', chain_error = s.message, updated_at = ?2 \
         FROM (SELECT COALESCE(parent_id, id) AS root, 'step ' || COALESCE(chain_step, 0) || \
           ' (' || type || ') was ' || status || ' by an operator' AS message FROM {ended} \
           AND status = ?1 AND finished_at = ?2 \
           AND (parent_id IS NOT NULL OR chain_status IS NOT NULL)) AS s \
         WHERE jobs.id = s.root AND jobs.chain_status = '{CHAIN_RUNNING}'"
    ))
    .bind(&[to.as_str().into(), num(now_ms)])
}

/// Only the step's own row having just been written (its final status, this run) lets the
/// chain move, so an attempt whose outcome was not written (it lost its lease) moves nothing.
const STEP_WRITTEN: &str =
    "EXISTS (SELECT 1 FROM jobs WHERE id = ?1 AND status = ?2 AND runs = ?3)";

/// The chain's statements after one attempt of `job`, whose row was written with
/// `step_status`: the next step's job (`next`) and the parent's status. Appended to the record
/// batch after the step's own UPDATE.
pub(super) fn statements(
    db: &D1Database,
    job: &Claimed,
    (chain, next): (&ChainMove, Option<&NewJob>),
    step_status: &str,
    now_ms: i64,
) -> worker::Result<Vec<D1PreparedStatement>> {
    let guarded = |more: Vec<JsValue>| {
        let mut binds = vec![
            JsValue::from_str(&job.id),
            JsValue::from_str(step_status),
            num(job.runs.into()),
        ];
        binds.extend(more);
        binds
    };
    let parent = |parent_id: &str, status: &str, error: Option<&str>| {
        db.prepare(format!(
            "UPDATE jobs SET chain_status = ?4, chain_error = ?5, updated_at = ?6 \
             WHERE id = ?7 AND {STEP_WRITTEN}"
        ))
        .bind(&guarded(vec![
            JsValue::from_str(status),
            error.map_or(JsValue::NULL, JsValue::from_str),
            num(now_ms),
            JsValue::from_str(parent_id),
        ]))
    };
    Ok(match (chain, next) {
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
            let insert = db
                .prepare(format!(
                    "INSERT OR IGNORE INTO jobs (id, type, family, status, priority, payload, \
                     attempts, max_attempts, run_at, created_at, updated_at, parent_id, chain_step, \
                     next_steps, correlation_id, retry_policy, expires_at, enqueued_by) \
                     SELECT ?4, ?5, ?6, ?7, ?8, ?9, 0, ?10, ?11, ?12, ?12, ?13, ?14, ?15, ?16, \
                     ?17, ?18, ?19 \
                     WHERE {STEP_WRITTEN}"
                ))
                .bind(&guarded(vec![
                    JsValue::from_str(&next.id),
                    JsValue::from_str(next.job_type.as_str()),
                    JsValue::from_str(next.family.as_str()),
                    JsValue::from_str(next.initial_status().as_str()),
                    num(next.priority),
                    JsValue::from_str(&next.payload),
                    num(next.max_attempts.into()),
                    num(next.run_at_ms),
                    num(now_ms),
                    JsValue::from_str(parent_id),
                    num((*index).into()),
                    rest.map_or(JsValue::NULL, |r| JsValue::from_str(&r)),
                    // Chains inherit the correlation id of the request that started them.
                    JsValue::from_str(job.correlation()),
                    opt_str(next.retry_policy.as_deref()),
                    next.expires_at_ms.map_or(JsValue::NULL, num),
                    // ... and who sent that request.
                    opt_str(job.enqueued_by.as_deref()),
                ]))?;
            // A chain a handler started, or one an operator's retry revived, runs (again).
            vec![insert, parent(parent_id, CHAIN_RUNNING, None)?]
        }
        (ChainMove::Done { parent_id }, _) => vec![parent(parent_id, CHAIN_SUCCEEDED, None)?],
        (ChainMove::Failed { parent_id, message }, _) => {
            vec![parent(parent_id, CHAIN_FAILED, Some(message))?]
        }
        _ => Vec::new(),
    })
}
