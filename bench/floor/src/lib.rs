//! The floor the benchmark compares against: the same Rust toolchain and worker crate, the same
//! queue messages (a ULID and the request's correlation id per job) and consumer settings, and
//! nothing else (no validation, no D1). One build plays both roles: `POST /v1/jobs/batch` sends
//! one message per job to the family queue (the producer), the queue handler acks every message
//! (the consumer), and `GET /acked` says how many it has acked.
//!
//! Given a `DB` binding it becomes the D1 floor: it also makes the round trips the platform's
//! contract allows (one per enqueue request, two per consumer batch), each an empty statement,
//! to show what D1 itself costs where the benchmark runs.
//!
//! Given an `HTTP_URL` var it becomes the http floor: its queue handler POSTs once to that URL
//! per message and reads the answer, at most as many at once per batch as the consumer's
//! outbound gate allows (`ConsumerLimits::DEFAULT.connections`), to show what the fetches
//! themselves cost.

use std::sync::atomic::{AtomicU64, Ordering};

use futures::stream::{self, StreamExt};
use jobs_shared::job::envelope::JobMessage;
use jobs_shared::job::ids::job_id;
use jobs_shared::job::job_type::JobType;
use jobs_shared::job::lease::ConsumerLimits;
use serde::Deserialize;
use worker::{
    event, BatchMessageBuilder, Context, Env, Fetch, MessageBatch, MessageExt, Method, Request,
    RequestInit, Response, Result,
};

static ACKED: AtomicU64 = AtomicU64::new(0);
static SENT: AtomicU64 = AtomicU64::new(0);

#[derive(Deserialize)]
struct Batch {
    jobs: Vec<Job>,
}

#[derive(Deserialize)]
struct Job {
    #[serde(rename = "type")]
    job_type: String,
}

#[event(fetch)]
async fn fetch(mut req: Request, env: Env, _ctx: Context) -> Result<Response> {
    if req.path() == "/acked" {
        return Response::ok(ACKED.load(Ordering::Relaxed).to_string());
    }
    let batch: Batch = req.json().await?;
    let Some(job_type) = batch.jobs.first().and_then(|j| JobType::parse(&j.job_type)) else {
        return Response::error("unknown type", 422);
    };
    let now = worker::Date::now().as_millis() as i64;
    let cid = format!("{:032x}", SENT.load(Ordering::Relaxed));
    let messages: Vec<JobMessage> = batch
        .jobs
        .iter()
        .map(|_| {
            let id = job_id(now, SENT.fetch_add(1, Ordering::Relaxed).into());
            JobMessage::stored(&id, job_type.as_str(), Some(&cid))
        })
        .collect();
    d1_round_trip(&env).await?;
    env.queue(job_type.family().queue_binding())?
        .send_batch(BatchMessageBuilder::new().messages(messages).build())
        .await?;
    Response::ok("sent").map(|r| r.with_status(202))
}

#[event(queue)]
async fn queue(batch: MessageBatch<JobMessage>, env: Env, _ctx: Context) -> Result<()> {
    d1_round_trip(&env).await?;
    let messages = batch.messages()?;
    if let Ok(url) = env.var("HTTP_URL") {
        let url = url.to_string();
        stream::iter(&messages)
            .map(|_| post(&url))
            .buffer_unordered(ConsumerLimits::DEFAULT.connections)
            .collect::<Vec<Result<()>>>()
            .await
            .into_iter()
            .collect::<Result<()>>()?;
    }
    d1_round_trip(&env).await?;
    for message in messages {
        message.ack();
        ACKED.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// The http floor's one request per message: a POST to `url`, its answer read whole.
async fn post(url: &str) -> Result<()> {
    let mut init = RequestInit::new();
    init.with_method(Method::Post);
    let request = Request::new_with_init(url, &init)?;
    Fetch::Request(request).send().await?.text().await?;
    Ok(())
}

/// With a DB binding (the D1 floor), one D1 round trip of an empty statement.
async fn d1_round_trip(env: &Env) -> Result<()> {
    if let Ok(db) = env.d1("DB") {
        db.batch(vec![db.prepare("SELECT 1")]).await?;
    }
    Ok(())
}
