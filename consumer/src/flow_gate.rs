//! Flow control in a batch (docs/app-guide.md "Flow control"): the claimed jobs of a type with
//! flow control, grouped by key, each group asking its key's limiter (crate::flow_limiter) for
//! slots in one call, and again, with the slots its ended jobs give back, each time one ends. A
//! job granted a start later sleeps until then; one held back waits in the batch up to
//! [`FLOW_WAIT_MS`] and is then handed back unstarted, its message due when the limiter says a
//! slot frees: no attempt is spent on waiting. A type without flow control never gets here.

use std::future::Future;
use std::time::Duration;

use futures::future::{select, Either};
use futures::stream::{FuturesUnordered, StreamExt};
use jobs_shared::job::flow_control::{
    limiter_name, FlowRequest, FlowTally, Limit, Limits, Slot, Want, CONCURRENCY_RETRY_MS,
};
use jobs_shared::job::job_type::JobType;
use jobs_shared::job::lease;
use jobs_shared::runtime::clock::now_ms;
use jobs_store::jobs::Claimed;
use worker::{Delay, Env, Method, Request, RequestInit};

use crate::deadline::within;
use crate::job_context::Release;

/// How long a job held back by its key's limits waits in the batch before it is handed back.
pub const FLOW_WAIT_MS: i64 = 30_000;

/// How far past its job's deadline a slot is held (the batch ends a job 1 s past it).
const HOLD_SLACK_MS: i64 = 2_000;

/// How long a call to a key's limiter may take.
const LIMITER_TIMEOUT_MS: u64 = 5_000;

/// A limiter that did not answer: its jobs are handed back, to ask again in a few seconds.
const UNAVAILABLE: Release = Release {
    retry_secs: 5,
    reason: "flow_unavailable",
};

/// The claimed jobs of one type and key (and limits), by their index in the batch.
pub struct FlowGroup<'a> {
    pub job_type: JobType,
    pub limits: Limits,
    pub key: String,
    pub jobs: Vec<(usize, &'a Claimed)>,
}

/// The batch's jobs split: the indexes of those without flow control, and the others grouped
/// by type and key, in the batch's order.
pub fn group<'a>(jobs: &[&'a Claimed]) -> (Vec<usize>, Vec<FlowGroup<'a>>) {
    let mut plain = Vec::with_capacity(jobs.len());
    let mut groups: Vec<FlowGroup<'a>> = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let Some((job_type, key, limits)) = flow_of(job) else {
            plain.push(i);
            continue;
        };
        match groups
            .iter_mut()
            .find(|g| g.job_type == job_type && g.key == key && g.limits == limits)
        {
            Some(group) => group.jobs.push((i, job)),
            None => groups.push(FlowGroup {
                job_type,
                limits,
                key,
                jobs: vec![(i, job)],
            }),
        }
    }
    (plain, groups)
}

/// A job's type, key and limits, when it has flow control: its own limits (`flow_limits`) in
/// place of its type's, keyed as its type keys it or by its own `flow_key`.
fn flow_of(job: &Claimed) -> Option<(JobType, String, Limits)> {
    let job_type = JobType::parse(&job.job_type)?;
    let own = (job.flow_limits.as_deref()).and_then(|l| serde_json::from_str::<Limits>(l).ok());
    let (key, limits) = match (job_type.flow(), own) {
        (Some(spec), own) => (
            spec.key_of(job.flow_key.as_deref(), &job.payload),
            own.unwrap_or(spec.limits),
        ),
        (None, Some(own)) => (job.flow_key.clone().unwrap_or_default(), own),
        (None, None) => return None,
    };
    Some((job_type, key, limits))
}

/// Runs `group`'s jobs as its key's limits let them, each through `run`; returns each job's end
/// by its index in the batch, and what the key's limits did (for `flow_keys`).
pub async fn run_group<'a, T, F, Fut>(
    env: &Env,
    group: FlowGroup<'a>,
    run: F,
) -> (Vec<(usize, Result<T, Release>)>, FlowTally)
where
    F: Fn(&'a Claimed) -> Fut,
    Fut: Future<Output = Result<T, Release>> + 'a,
{
    // A slot whose job's invocation died frees itself when that job could no longer be running.
    let hold_ms = lease::deadline_ms(group.job_type, None) + HOLD_SLACK_MS;
    let limits = group.limits;
    let waits_until = now_ms() + FLOW_WAIT_MS;
    let mut pending = group.jobs.clone();
    let mut ended: Vec<String> = Vec::new();
    let mut ends = Vec::with_capacity(pending.len());
    let mut running = FuturesUnordered::new();
    let mut tally = FlowTally {
        r#type: group.job_type.as_str().to_string(),
        key: group.key.clone(),
        ..FlowTally::default()
    };
    let mut waited: Vec<usize> = Vec::new();
    while !pending.is_empty() || !running.is_empty() {
        if limits.concurrency.is_none() {
            ended.clear(); // a rate counts starts, not what runs: nothing to give back
        }
        if !pending.is_empty() || !ended.is_empty() {
            let max_wait_ms = (waits_until - now_ms()).max(0);
            let ask = FlowRequest {
                limits,
                acquire: (pending.iter())
                    .map(|(_, job)| Want {
                        job: job.id.clone(),
                        hold_ms,
                        max_wait_ms,
                    })
                    .collect(),
                release: std::mem::take(&mut ended),
            };
            tally.limiter_calls += 1;
            let slots = match limiter(env, &group, &ask).await {
                // One slot per job asked for, in order; any other answer is no answer.
                Ok(slots) if slots.len() == pending.len() => slots,
                _ => {
                    tally.handed_back += pending.len() as u32;
                    ends.extend(pending.drain(..).map(|(i, _)| (i, Err(UNAVAILABLE))));
                    continue;
                }
            };
            let mut still = Vec::new();
            for ((i, job), slot) in pending.drain(..).zip(slots) {
                let held = !matches!(slot, Slot::Granted { start_in_ms: 0, .. });
                if held && !waited.contains(&i) {
                    waited.push(i);
                }
                match slot {
                    Slot::Granted { start_in_ms, .. } => {
                        tally.started += 1;
                        running.push(start_after(start_in_ms, i, job, &run));
                    }
                    Slot::Denied {
                        by: Limit::Concurrency,
                        ..
                    } if max_wait_ms > 0 => still.push((i, job)),
                    Slot::Denied {
                        retry_in_ms, by, ..
                    } => {
                        tally.handed_back += 1;
                        ends.push((i, Err(held_back(retry_in_ms, by))));
                    }
                }
            }
            pending = still;
        }
        // Until a job ends (its slot goes back with the next ask), or it is time to ask again.
        let poll = Delay::from(Duration::from_millis(CONCURRENCY_RETRY_MS as u64));
        if running.is_empty() {
            poll.await;
            continue;
        }
        if let Either::Left((Some((i, id, end)), _)) = select(running.next(), poll).await {
            ended.push(id);
            ends.push((i, end));
        }
    }
    if !ended.is_empty() && limits.concurrency.is_some() {
        let release = FlowRequest {
            limits,
            acquire: Vec::new(),
            release: ended,
        };
        // A release that does not arrive frees its slot when its hold ends.
        tally.limiter_calls += 1;
        let _ = limiter(env, &group, &release).await;
    }
    tally.waited = waited.len() as u32;
    (ends, tally)
}

/// A job granted a start `start_in_ms` from now: run then, ending with its id.
async fn start_after<'a, T, F, Fut>(
    start_in_ms: i64,
    i: usize,
    job: &'a Claimed,
    run: &F,
) -> (usize, String, Result<T, Release>)
where
    F: Fn(&'a Claimed) -> Fut,
    Fut: Future<Output = Result<T, Release>> + 'a,
{
    if start_in_ms > 0 {
        Delay::from(Duration::from_millis(start_in_ms as u64)).await;
    }
    (i, job.id.clone(), run(job).await)
}

/// A job its key's limits held back past the batch's wait: handed back, due when a slot frees.
fn held_back(retry_in_ms: i64, by: Limit) -> Release {
    Release {
        retry_secs: ((retry_in_ms + 999) / 1_000).max(1) as u64,
        reason: match by {
            Limit::Concurrency => "flow_concurrency",
            Limit::Rate => "flow_rate",
        },
    }
}

/// One call to the key's limiter (the consumer's `FLOW` binding).
async fn limiter(env: &Env, group: &FlowGroup<'_>, ask: &FlowRequest) -> worker::Result<Vec<Slot>> {
    let name = limiter_name(group.job_type.as_str(), &group.key);
    let stub = env
        .durable_object("FLOW")?
        .id_from_name(&name)?
        .get_stub()?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_body(Some(serde_json::to_string(ask)?.into()));
    let request = Request::new_with_init("https://flow/", &init)?;
    let answer = within(LIMITER_TIMEOUT_MS, stub.fetch_with_request(request)).await;
    let mut response = answer.ok_or_else(|| {
        worker::Error::RustError("the flow limiter did not answer in time".into())
    })??;
    if response.status_code() != 200 {
        return Err(worker::Error::RustError(format!(
            "the flow limiter answered {}",
            response.status_code()
        )));
    }
    response.json().await
}
