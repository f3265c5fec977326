//! Job chains in the consumer: a step's follow-ups are checked with its outcome, the chain's
//! next move is planned here and written in the SAME D1 batch that records the step
//! (`jobs_store::jobs::job_set_outcome_many`), so a recorded success always has its next step
//! and a dead step always fails its parent; the next step's message is sent after that batch.
//! A send that fails leaves the step in the outbox (`sent_at` NULL) for the maintenance sweep,
//! like any enqueue.

use jobs_shared::job::chain::{
    after_death, after_skip, after_success, failed_chain_of_dead_step, failed_chain_of_ended_step,
    follow_ups, ChainMove, ChainPosition,
};
use jobs_shared::job::enqueue::{validate_next_step, validate_steps, NewJob};
use jobs_shared::job::enqueue::{EXPIRED_UNRUN, MAX_SCHEDULE_AHEAD_SECS};
use jobs_shared::job::ids::job_id;
use jobs_shared::job::job_outcome::Decision;
use jobs_shared::job::job_type::JobType;
use jobs_shared::job::lease::LOST_ATTEMPT;
use jobs_shared::job::workflow_group::{self, GroupPayload};
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use jobs_shared::retry::retry_policy::{plan_delivery_at, QueueDelayLimit};
use jobs_shared::runtime::queue_send::{send_to, Destination, Outgoing};
use jobs_store::jobs::{Branch, ChainWrite, Claimed, Exhausted, FailedChain, Unsent};
use serde_json::Value;
use worker::Env;

/// Pulls checked follow-up jobs out of a successful result. Invalid follow-ups, or an answer cut
/// before its end (whose follow-ups cannot be read), fail the attempt (invalid_payload, not
/// retried): running the step again would return the same answer.
pub fn take_follow_ups(
    outcome: Result<Option<Value>, JobError>,
    now_ms: i64,
) -> (Result<Option<Value>, JobError>, Vec<Value>) {
    let checked = match &outcome {
        Ok(result) => follow_ups(result.as_ref()).and_then(|listed| match listed {
            Some(list) => validate_steps(jobs_shared::job::chain::FOLLOW_UP_KEY, list, now_ms)
                .map_err(|e| {
                    let field = e.field.unwrap_or_default();
                    format!("invalid follow-up job at {field}: {}", e.message)
                }),
            None => Ok(Vec::new()),
        }),
        Err(_) => Ok(Vec::new()),
    };
    match checked {
        Ok(steps) => (outcome, steps),
        Err(message) => (
            Err(JobError::new(ErrorClass::InvalidPayload, message)),
            Vec::new(),
        ),
    }
}

/// A chain's move after one attempt, with the next step's job when there is one, and that
/// step's branches when it is a group.
pub struct Planned {
    pub chain: ChainMove,
    pub next: Option<NewJob>,
    pub branches: Vec<Branch>,
}

impl Planned {
    /// What the record writes for it (`jobs_store::jobs::Finished::chain`).
    pub fn write(&self) -> ChainWrite<'_> {
        ChainWrite {
            chain: &self.chain,
            next: self.next.as_ref(),
            branches: &self.branches,
        }
    }

    fn only(chain: ChainMove) -> Planned {
        Planned {
            chain,
            next: None,
            branches: Vec::new(),
        }
    }
}

/// The next step is kept in D1 when due beyond `limit` (QUEUE_MAX_DELAY_SECS). `result` is the
/// attempt's, whose list a next step that is a `for_each` group runs over.
pub fn plan(
    job: &Claimed,
    decision: &Decision,
    follow_ups: Vec<Value>,
    result: Option<&Value>,
    now_ms: i64,
    limit: QueueDelayLimit,
) -> Planned {
    let at = position(job);
    let chain = match decision {
        Decision::Succeed => after_success(&at, follow_ups),
        Decision::Dead { error } => after_death(&at, &job.job_type, &error.to_string()),
        Decision::Skip { error } => after_skip(&at, &job.job_type, &error.to_string()),
        Decision::Retry { .. } | Decision::RetryLater { .. } => ChainMove::None,
    };
    let ChainMove::Next { step, index, .. } = &chain else {
        return Planned::only(chain);
    };
    let index = *index;
    let planned = validate_next_step(step, new_id(now_ms), now_ms, limit)
        .map_err(|e| e.message)
        .and_then(|next| match next.job_type == JobType::GROUP {
            true => with_branches(next, step, result, now_ms, limit),
            false => Ok((next, Vec::new())),
        });
    match planned {
        Ok((next, branches)) => Planned {
            chain,
            next: Some(next),
            branches,
        },
        // Checked when it entered the chain (a group's list is only known now); should a
        // later check disagree, stop here loudly.
        Err(message) => Planned::only(ChainMove::Failed {
            parent_id: at.parent().to_string(),
            message: format!("step {index} could not be enqueued: {message}"),
        }),
    }
}

/// A group step and its branches (docs/app-guide.md "Workflows"): the group waits in D1 until
/// its branches have ended (their ends make it due: `jobs_store::jobs::job_join_groups`).
fn with_branches(
    mut group: NewJob,
    step: &Value,
    result: Option<&Value>,
    now_ms: i64,
    limit: QueueDelayLimit,
) -> Result<(NewJob, Vec<Branch>), String> {
    let payload = GroupPayload::parse(&step["payload"]).map_err(|e| e.message)?;
    // Each spec is checked once: a `for_each` group's one spec serves every element.
    let checked = (payload.specs().into_iter().enumerate())
        .map(|(i, spec)| {
            validate_next_step(spec, String::new(), now_ms, limit)
                .map_err(|e| format!("branch {i}: {}", e.message))
        })
        .collect::<Result<Vec<NewJob>, String>>()?;
    let specs = workflow_group::branches(&payload, result)?;
    let branches = (specs.into_iter().zip(0..))
        .map(|(branch, index)| {
            let spec = &checked[if branch.item.is_some() {
                0
            } else {
                index as usize
            }];
            Branch {
                job: NewJob {
                    id: new_id(now_ms),
                    ..spec.clone()
                },
                index,
                item: branch.item.map(|(item, _)| item.clone()),
            }
        })
        .collect::<Vec<_>>();
    // With no branch to wait for (an empty list), it runs at once.
    if !branches.is_empty() {
        group.run_at_ms = now_ms + MAX_SCHEDULE_AHEAD_SECS * 1000;
        group.delivery = plan_delivery_at(group.run_at_ms, now_ms, limit);
    }
    Ok((group, branches))
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
    let (parent_id, message) =
        failed_chain_of_dead_step(&job.id, &job.job_type, &job.chain, LOST_ATTEMPT)?;
    Some(FailedChain {
        parent_id,
        message,
        at_ms: now_ms,
    })
}

/// The chain a step skipped at the claim for its expiry belongs to, failed; `None` outside
/// a chain.
pub fn failed_by_expiry(job: &Exhausted, now_ms: i64) -> Option<FailedChain> {
    let ended = format!("was skipped: {EXPIRED_UNRUN}");
    let (parent_id, message) =
        failed_chain_of_ended_step(&job.id, &job.job_type, &job.chain, &ended)?;
    Some(FailedChain {
        parent_id,
        message,
        at_ms: now_ms,
    })
}

/// Sends each next step's message with its correlation id (the step is already in D1; a
/// failed send leaves it in the outbox for the sweep), with a group's branches, and the jobs
/// the batch made due (joined groups, callbacks).
pub async fn send(env: &Env, jobs: &[(&NewJob, &str)], made_due: &[Unsent]) {
    let stored = made_due
        .iter()
        .filter_map(|g| Outgoing::stored(g.stored(), 0));
    let outgoing: Vec<Outgoing> = (jobs.iter())
        .filter_map(|(job, cid)| Outgoing::new_job(job, cid))
        .chain(stored)
        .collect();
    send_to(env, &outgoing, Destination::Lanes).await;
}

/// A new job's id at `now_ms`.
fn new_id(now_ms: i64) -> String {
    let mut bytes = [0u8; 16];
    // The ULID's randomness only has to make ids unique; on failure the time part still orders.
    let _ = getrandom::getrandom(&mut bytes);
    job_id(now_ms, u128::from_le_bytes(bytes))
}
