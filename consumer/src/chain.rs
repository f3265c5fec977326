//! Job chains in the consumer: a step's follow-ups are checked with its outcome, the chain's
//! next move is written in the SAME D1 batch that records the step (so a recorded success
//! always has its next step, and a dead step always fails its parent), and the next step's
//! message is sent after that batch. A send that fails leaves the step in the outbox
//! (`sent_at` NULL) for the maintenance sweep, like any enqueue.

use jobs_shared::job::lease::LOST_ATTEMPT;
use jobs_shared::observe::job_event::run_outcome;
use jobs_shared::util::queue_send::{send_to, Outgoing};
use jobs_shared::{
    after_death, after_success, follow_ups, job_id, validate_enqueue, validate_steps, ChainMove,
    ChainPosition, Decision, DeliveryPlan, ErrorClass, Family, JobError, NewJob, QueueDelayLimit,
};
use serde_json::Value;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Env};

use crate::claim_store::{Claimed, Exhausted, FailedChain};
use crate::num;

/// Pulls checked follow-up jobs out of a successful result. Invalid follow-ups fail the attempt
/// (invalid_payload, not retried): running the step again would return the same ones.
pub fn take_follow_ups(
    outcome: Result<Option<Value>, JobError>,
    now_ms: i64,
) -> (Result<Option<Value>, JobError>, Vec<Value>) {
    let checked = match &outcome {
        Ok(result) => follow_ups(result.as_ref())
            .map(|list| validate_steps(jobs_shared::FOLLOW_UP_KEY, list, now_ms)),
        Err(_) => None,
    };
    match checked {
        Some(Ok(steps)) => (outcome, steps),
        Some(Err(e)) => {
            let field = e.field.unwrap_or_default();
            let message = format!("invalid follow-up job at {field}: {}", e.message);
            (
                Err(JobError::new(ErrorClass::InvalidPayload, message)),
                Vec::new(),
            )
        }
        None => (outcome, Vec::new()),
    }
}

/// A chain's move after one attempt, with the next step's job when there is one.
pub struct Planned {
    pub chain: ChainMove,
    pub next: Option<NewJob>,
    /// The status the step's own row is written with, its run outcome (what the chain's writes
    /// are guarded on).
    step_status: &'static str,
}

/// The next step is held in D1 when due beyond `limit` (QUEUE_MAX_DELAY_SECS).
pub fn plan(
    job: &Claimed,
    decision: &Decision,
    follow_ups: Vec<Value>,
    now_ms: i64,
    limit: QueueDelayLimit,
) -> Planned {
    let at = position(job);
    let step_status = run_outcome(decision);
    let chain = match decision {
        Decision::Succeed => after_success(&at, follow_ups),
        Decision::Dead { error } => after_death(&at, &job.job_type, &error.to_string()),
        Decision::Retry { .. } | Decision::Hold { .. } => ChainMove::None,
    };
    let ChainMove::Next { step, index, .. } = &chain else {
        return Planned {
            chain,
            next: None,
            step_status,
        };
    };
    match validate_enqueue(step, job_id(now_ms, random_u128()), now_ms, limit) {
        Ok(next) => Planned {
            chain,
            next: Some(next),
            step_status,
        },
        // Checked when it entered the chain; should a later check disagree, stop here loudly.
        Err(e) => Planned {
            chain: ChainMove::Failed {
                parent_id: at.parent().to_string(),
                message: format!("step {index} could not be enqueued: {}", e.message),
            },
            next: None,
            step_status,
        },
    }
}

fn position(job: &Claimed) -> ChainPosition<'_> {
    ChainPosition {
        job_id: &job.id,
        parent_id: job.parent_id.as_deref(),
        step: job.chain_step.unwrap_or(0),
        next_steps: job.next_steps.as_deref(),
        chain_status: job.chain_status.as_deref(),
    }
}

/// The chain a step the claim found dead (at `now_ms`) belongs to, and why it failed; `None`
/// outside a chain.
pub fn failed_by_lost_attempt(job: &Exhausted, now_ms: i64) -> Option<FailedChain> {
    let at = ChainPosition {
        job_id: &job.id,
        parent_id: job.parent_id.as_deref(),
        step: job.chain_step.unwrap_or(0),
        next_steps: None,
        chain_status: job.chain_status.as_deref(),
    };
    match after_death(&at, &job.job_type, LOST_ATTEMPT) {
        ChainMove::Failed { parent_id, message } => Some((parent_id, message, now_ms)),
        _ => None,
    }
}

/// Only the step's own row having just been written (its final status, this run) lets the
/// chain move, so an attempt whose outcome was not written (it lost its lease) moves nothing.
const STEP_WRITTEN: &str =
    "EXISTS (SELECT 1 FROM jobs WHERE id = ?1 AND status = ?2 AND runs = ?3)";

/// The chain's statements, appended to the record batch after the step's own UPDATE.
pub fn statements(
    db: &D1Database,
    job: &Claimed,
    planned: &Planned,
    now_ms: i64,
) -> worker::Result<Vec<D1PreparedStatement>> {
    let guarded = |more: Vec<JsValue>| {
        let mut binds = vec![
            JsValue::from_str(&job.id),
            JsValue::from_str(planned.step_status),
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
    Ok(match (&planned.chain, &planned.next) {
        (
            ChainMove::Next {
                parent_id,
                index,
                rest,
                ..
            },
            Some(next),
        ) => {
            let status = match next.delivery {
                DeliveryPlan::Send { .. } => "queued",
                DeliveryPlan::Hold { .. } => "scheduled",
            };
            let rest = (!rest.is_empty()).then(|| Value::Array(rest.clone()).to_string());
            let insert = db
                .prepare(format!(
                    "INSERT OR IGNORE INTO jobs (id, type, family, status, priority, payload, \
                     attempts, max_attempts, run_at, created_at, updated_at, parent_id, chain_step, \
                     next_steps, correlation_id) \
                     SELECT ?4, ?5, ?6, ?7, ?8, ?9, 0, ?10, ?11, ?12, ?12, ?13, ?14, ?15, ?16 \
                     WHERE {STEP_WRITTEN}"
                ))
                .bind(&guarded(vec![
                    JsValue::from_str(&next.id),
                    JsValue::from_str(next.job_type.as_str()),
                    JsValue::from_str(next.family.as_str()),
                    JsValue::from_str(status),
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
                ]))?;
            // A chain a handler started, or one an operator's retry revived, runs (again).
            vec![insert, parent(parent_id, "running", None)?]
        }
        (ChainMove::Done { parent_id }, _) => vec![parent(parent_id, "succeeded", None)?],
        (ChainMove::Failed { parent_id, message }, _) => {
            vec![parent(parent_id, "failed", Some(message))?]
        }
        _ => Vec::new(),
    })
}

/// Sends each next step's message with its correlation id (the step is already in D1; a
/// failed send leaves it in the outbox for the sweep).
pub async fn send(env: &Env, jobs: &[(&NewJob, &str)]) {
    let outgoing: Vec<Outgoing> = jobs
        .iter()
        .filter_map(|(job, cid)| Outgoing::new_job(job, cid))
        .collect();
    send_to(env, &outgoing, Family::queue_binding).await;
}

fn random_u128() -> u128 {
    let mut bytes = [0u8; 16];
    // The ULID's randomness only has to make ids unique; on failure the time part still orders.
    let _ = getrandom::getrandom(&mut bytes);
    u128::from_le_bytes(bytes)
}
