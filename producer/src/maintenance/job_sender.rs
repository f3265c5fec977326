//! Sends the messages of jobs the sweep released (due, rescued, promoted, re-sent or just
//! enqueued by a schedule) and records each accepted send in `sent_at`, so the outbox
//! re-sender leaves it alone. The rows are already in their next state: a send that fails
//! leaves them in the outbox, and a later tick sends them.

use jobs_shared::{plan_delivery_at, Delivery, QUEUE_DELAY_LIMIT_SECS};
use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, Env};

use crate::dispatch::{self, Outgoing};
use crate::job_store::num;

/// A job to send: what the message and its delay need.
#[derive(Deserialize)]
pub struct Unsent {
    pub id: String,
    #[serde(rename = "type")]
    pub job_type: String,
    pub family: String,
    pub run_at: i64,
    /// Carried in the message (the consumer reads the column too).
    #[serde(default)]
    pub correlation_id: Option<String>,
}

/// The columns an `Unsent` is read from, for `RETURNING` and `SELECT` lists.
pub const UNSENT_COLUMNS: &str = "id, type, family, run_at, correlation_id";

/// Sends every job (one sendBatch per family and 100 messages) with the delay left until its
/// `run_at`, then marks the accepted ones sent in one statement. Returns how many were sent.
pub async fn send(
    env: &Env,
    db: &D1Database,
    jobs: &[Unsent],
    now_ms: i64,
) -> worker::Result<usize> {
    let outgoing: Vec<Outgoing> = jobs
        .iter()
        .filter_map(|job| {
            let delay_secs = match plan_delivery_at(job.run_at, now_ms) {
                Delivery::Send { delay_secs } => delay_secs,
                Delivery::Hold { .. } => QUEUE_DELAY_LIMIT_SECS as u32,
            };
            Outgoing::stored(
                &job.id,
                &job.job_type,
                &job.family,
                delay_secs,
                job.correlation_id.as_deref(),
            )
        })
        .collect();
    if outgoing.is_empty() {
        return Ok(0);
    }
    let sent = dispatch::send_all(env, outgoing).await;
    if sent.is_empty() {
        return Ok(0);
    }
    // A consumer may have claimed a job already (its claim sets sent_at): leave that alone.
    let ids = JsValue::from_str(&serde_json::to_string(&sent).unwrap_or_default());
    db.prepare(
        "UPDATE jobs SET sent_at = ?2 WHERE id IN (SELECT value FROM json_each(?1)) AND sent_at IS NULL",
    )
    .bind(&[ids, num(now_ms)])?
    .run()
    .await?;
    Ok(sent.len())
}
