//! POST /v1/jobs and POST /v1/jobs/batch: validate everything, write to D1 in one batch (shared
//! with the requests that arrive while another write is in flight: crate::enqueue_group), then
//! send. 202 means D1 holds the job; a send that fails leaves it in the outbox, not lost.
//! Every job of a request carries the request's correlation id (crate::correlation).

use jobs_shared::runtime::faults;
use std::rc::Rc;

use jobs_shared::job::enqueue::{check_stored_size, validate_batch, validate_enqueue, NewJob};
use jobs_shared::job::ids::job_id;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::runtime::queue_send::queue_delay_limit;
use jobs_shared::security::auth::Caller;
use jobs_store::jobs::{self, Accepted, Written};
use serde::Serialize;
use worker::Response;

use crate::enqueue_group::{self, Entry, GroupWrite};
use crate::env_config::now_ms;
use crate::request::Request;
use crate::router::Host;
use crate::{body, correlation, random, respond};

#[derive(Serialize)]
struct Answered<'a> {
    id: &'a str,
    status: &'a str,
    family: &'static str,
    deduplicated: bool,
    /// This request's correlation id (also in the X-Request-Id header).
    correlation_id: &'a str,
}

/// POST /v1/jobs/batch's answer: a struct, not a `json!` tree (a hundred maps built and
/// dropped per request for nothing).
#[derive(Serialize)]
struct BatchAccepted<'a> {
    jobs: Vec<Answered<'a>>,
}

pub async fn one(host: Host<'_>, by: Caller, req: &mut Request) -> Result<Response, ApiError> {
    let cid = correlation::of_request(req)?;
    let by = Enqueuer {
        caller: by,
        cid: &cid,
    };
    with_request_id(one_as(host, &by, req).await, &cid)
}

pub async fn batch(host: Host<'_>, by: Caller, req: &mut Request) -> Result<Response, ApiError> {
    let cid = correlation::of_request(req)?;
    let by = Enqueuer {
        caller: by,
        cid: &cid,
    };
    with_request_id(batch_as(host, &by, req).await, &cid)
}

/// Who enqueues: the caller, whose name each job records and whose fence its types must be
/// inside, under the request's correlation id `cid`.
struct Enqueuer<'a> {
    caller: Caller,
    cid: &'a str,
}

/// The request's correlation id on its answer, an error's too, so a client can quote it either
/// way (docs/app-guide.md "Correlation ids").
fn with_request_id(answer: Result<Response, ApiError>, cid: &str) -> Result<Response, ApiError> {
    let response = match answer {
        Ok(response) => response,
        Err(error) => respond::error(&error)?,
    };
    respond::with_headers(response, &[(correlation::HEADER, cid)])
}

/// POST /v1/jobs.
async fn one_as(
    host: Host<'_>,
    by: &Enqueuer<'_>,
    req: &mut Request,
) -> Result<Response, ApiError> {
    let (env, cid) = (host.env, by.cid);
    let body = body::json(req).await?;
    let now = now_ms();
    let limit = queue_delay_limit(env);
    let job = validate_enqueue(&body, job_id(now, random_u128()?), now, limit)?;
    by.caller.may_enqueue(std::slice::from_ref(&job), false)?;
    let field = if job.steps.as_ref().map_or(0, String::len) > job.payload.len() {
        "steps"
    } else {
        "payload"
    };
    let (entry, written, write) =
        write_and_send(host, vec![job], field, &accepted_by(by, now)).await?;
    let status = if written[0].deduplicated { 200 } else { 202 };
    let response = respond::json(status, &accepted(&entry.jobs[0], &written[0], cid))?;
    timed(response, &write.server_timing(1))
}

/// POST /v1/jobs/batch.
async fn batch_as(
    host: Host<'_>,
    by: &Enqueuer<'_>,
    req: &mut Request,
) -> Result<Response, ApiError> {
    let (env, cid) = (host.env, by.cid);
    let body = body::json(req).await?;
    let now = now_ms();
    // Monotonic ULIDs within the request: one random draw, then successors (as the ULID
    // spec does for ids minted in the same millisecond).
    let seed = random_u128()?;
    let mut n = 0u128;
    let ids = || {
        n += 1;
        job_id(now, seed.wrapping_add(n))
    };
    let jobs = validate_batch(&body, ids, now, queue_delay_limit(env))?;
    by.caller.may_enqueue(&jobs, true)?;
    let (entry, written, write) = write_and_send(host, jobs, "jobs", &accepted_by(by, now)).await?;
    let jobs = entry
        .jobs
        .iter()
        .zip(&written)
        .map(|(job, w)| accepted(job, w, cid))
        .collect();
    let response = respond::json(202, &BatchAccepted { jobs })?;
    timed(response, &write.server_timing(entry.jobs.len()))
}

/// What `by`'s request at `now` records on each job it writes.
fn accepted_by<'a>(by: &'a Enqueuer<'_>, now: i64) -> Accepted<'a> {
    Accepted {
        correlation_id: by.cid,
        enqueued_by: &by.caller.name,
        at_ms: now,
    }
}

/// Writes `jobs` once their stored form is within bounds (else 413 naming `field`, nothing
/// written), each with the request's correlation id, caller's name and time, then sends them.
/// Returns the jobs (in their entry) with what was written and the write that carried them.
async fn write_and_send(
    host: Host<'_>,
    jobs: Vec<NewJob>,
    field: &str,
    request: &Accepted<'_>,
) -> Result<(Rc<Entry>, Vec<Written>, GroupWrite), ApiError> {
    let Host { env, ctx } = host;
    let rows = jobs::rows_json(&jobs, request).map_err(|e| faults::internal(&e))?;
    check_stored_size(rows.len(), field)?;
    let cid = request.correlation_id;
    let (entry, answer) = enqueue_group::write(ctx, env, jobs, rows, cid).await;
    let (written, write) = answer?;
    Ok((entry, written, write))
}

/// The write behind the response in a Server-Timing header (`GroupWrite::server_timing`).
fn timed(response: Response, timing: &str) -> Result<Response, ApiError> {
    respond::with_headers(response, &[("server-timing", timing)])
}

fn accepted<'a>(job: &NewJob, written: &'a Written, cid: &'a str) -> Answered<'a> {
    Answered {
        id: &written.id,
        status: &written.status,
        family: job.family.as_str(),
        deduplicated: written.deduplicated,
        correlation_id: cid,
    }
}

/// Randomness for job ids.
fn random_u128() -> Result<u128, ApiError> {
    Ok(u128::from_le_bytes(random::bytes()?))
}
