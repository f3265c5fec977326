//! POST /v1/jobs and POST /v1/jobs/batch: validate everything, write to D1 in one batch, then
//! send. 202 means D1 holds the job; a send that fails leaves it in the outbox, not lost.
//! Every job of a request carries the request's correlation id (crate::correlation).

use jobs_shared::util::queue_send::queue_delay_limit;
use jobs_shared::{
    check_stored_size, job_id, validate_batch, validate_enqueue, ApiError, D1Stats, NewJob,
};
use jobs_store::jobs::{self, Written};
use serde::Serialize;
use worker::{Env, Response};

use crate::admin::d1;
use crate::env_config::now_ms;
use crate::request::Request;
use crate::{body, correlation, dispatch, random, respond};

#[derive(Serialize)]
struct Accepted<'a> {
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
    jobs: Vec<Accepted<'a>>,
}

/// `by`: the caller's name, recorded on each job.
pub async fn one(req: &mut Request, env: &Env, by: String) -> Result<Response, ApiError> {
    let cid = correlation::of_request(req)?;
    let body = body::json(req).await?;
    let now = now_ms();
    let limit = queue_delay_limit(env);
    let job = validate_enqueue(&body, job_id(now, random_u128()?), now, limit)?;
    let field = if job.steps.as_ref().map_or(0, String::len) > job.payload.len() {
        "steps"
    } else {
        "payload"
    };
    let (written, stats) =
        write_and_send(env, std::slice::from_ref(&job), field, now, (&cid, &by)).await?;
    let status = if written[0].deduplicated { 200 } else { 202 };
    let response = respond::json(status, &accepted(&job, &written[0], &cid))?;
    traced(response, &stats, &cid)
}

pub async fn batch(req: &mut Request, env: &Env, by: String) -> Result<Response, ApiError> {
    let cid = correlation::of_request(req)?;
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
    let (written, stats) = write_and_send(env, &jobs, "jobs", now, (&cid, &by)).await?;
    let jobs = jobs
        .iter()
        .zip(&written)
        .map(|(job, w)| accepted(job, w, &cid))
        .collect();
    let response = respond::json(202, &BatchAccepted { jobs })?;
    traced(response, &stats, &cid)
}

/// Writes `jobs` once their stored form is within bounds (else 413 naming `field`, nothing
/// written), each with the request's correlation id and caller's name, then sends them.
async fn write_and_send(
    env: &Env,
    jobs: &[NewJob],
    field: &str,
    now: i64,
    (cid, by): (&str, &str),
) -> Result<(Vec<Written>, D1Stats), ApiError> {
    let rows = jobs::rows_json(jobs);
    check_stored_size(rows.len(), field)?;
    let db = d1::database(env)?;
    let (written, stats) = jobs::job_insert_many(&db, jobs, &rows, now, (cid, by))
        .await
        .map_err(|e| respond::internal(&e))?;
    let fresh: Vec<&NewJob> = jobs
        .iter()
        .zip(&written)
        .filter(|(_, w)| !w.deduplicated)
        .map(|(job, _)| job)
        .collect();
    dispatch::send(env, &fresh, cid).await;
    Ok((written, stats))
}

/// The D1 work behind the response in a Server-Timing header (see D1Stats), and the
/// correlation id in its header.
fn traced(response: Response, stats: &D1Stats, cid: &str) -> Result<Response, ApiError> {
    respond::with_headers(
        response,
        &[
            ("server-timing", &stats.server_timing()),
            (correlation::HEADER, cid),
        ],
    )
}

fn accepted<'a>(job: &NewJob, written: &'a Written, cid: &'a str) -> Accepted<'a> {
    Accepted {
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
