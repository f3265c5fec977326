//! Sends the messages of jobs the sweep released (due, rescued, promoted, re-sent or just
//! enqueued by a schedule) and records each accepted send in `sent_at`, so the outbox
//! re-sender leaves it alone. The rows are already in their next state: a send that fails
//! leaves them in the outbox, and a later tick sends them.

use jobs_shared::{sql_in_list, JobStatus};
use wasm_bindgen::JsValue;

use super::Tick;
use crate::dispatch::{self, Unsent};
use crate::job_store::num;

/// Sends every job (one sendBatch per family and 100 messages) with the delay left until its
/// `run_at` (at most the queue's delay limit), then marks the accepted ones sent in one
/// statement. Returns how many were sent.
pub async fn send(tick: &Tick<'_>, jobs: &[Unsent]) -> worker::Result<usize> {
    let (env, db, now_ms) = (tick.env, tick.db, tick.now_ms);
    let outgoing: Vec<_> = jobs
        .iter()
        .filter_map(|job| job.outgoing(now_ms, tick.queue_limit, true))
        .collect();
    if outgoing.is_empty() {
        return Ok(0);
    }
    let sent = dispatch::send_all(env, &outgoing).await;
    if sent.is_empty() {
        return Ok(0);
    }
    // A consumer may have claimed a job already (it is running or finished): leave that
    // alone. A job that waits is marked, even one sent before (a lost message re-sent).
    let ids = JsValue::from_str(&serde_json::to_string(&sent).unwrap_or_default());
    let waiting = sql_in_list(&[JobStatus::Queued, JobStatus::Retrying]);
    db.prepare(format!(
        "UPDATE jobs SET sent_at = ?2 WHERE id IN (SELECT value FROM json_each(?1)) \
         AND +status IN ({waiting})"
    ))
    .bind(&[ids, num(now_ms)])?
    .run()
    .await?;
    Ok(sent.len())
}
