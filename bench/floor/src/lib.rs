//! The floor the benchmark compares against: the same Rust toolchain and worker crate, the same
//! queue messages and consumer settings, and nothing else (no validation store, no D1). One
//! build plays both roles: `POST /v1/jobs/batch` sends one message per job to the family queue
//! (the producer), the queue handler acks every message (the consumer), and `GET /acked` says
//! how many it has acked.

use std::sync::atomic::{AtomicU64, Ordering};

use jobs_shared::{JobMessage, JobType};
use serde::Deserialize;
use worker::{
    event, BatchMessageBuilder, Context, Env, MessageBatch, MessageExt, Request, Response, Result,
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
    let messages: Vec<JobMessage> = batch
        .jobs
        .iter()
        .map(|_| JobMessage::new(&SENT.fetch_add(1, Ordering::Relaxed).to_string(), job_type))
        .collect();
    env.queue(job_type.family().queue_binding())?
        .send_batch(BatchMessageBuilder::new().messages(messages).build())
        .await?;
    Response::ok("sent").map(|r| r.with_status(202))
}

#[event(queue)]
async fn queue(batch: MessageBatch<JobMessage>, _env: Env, _ctx: Context) -> Result<()> {
    for message in batch.messages()? {
        message.ack();
        ACKED.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}
