//! Sends the messages of jobs the sweep found due or recovered (scheduled, rescued, promoted, re-sent or just
//! enqueued by a schedule) and records each accepted send in `sent_at`, so the outbox
//! re-sender leaves it alone. The rows are already in their next state: a send that fails
//! leaves them in the outbox, and a later tick sends them.

use jobs_store::jobs::{job_mark_sent, Unsent};

use super::tick::Tick;
use crate::dispatch;

/// Sends every job (one sendBatch per family and 100 messages) with the delay left until its
/// `run_at` (at most the queue's delay limit), then marks the accepted ones sent in one
/// statement. Returns how many were sent.
pub async fn send(tick: &Tick<'_>, jobs: &[Unsent]) -> worker::Result<usize> {
    let (env, db, now_ms) = (tick.env, tick.db, tick.now_ms);
    let outgoing: Vec<_> = jobs
        .iter()
        .filter_map(|job| dispatch::outgoing(job, now_ms, tick.queue_limit, true))
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
    job_mark_sent(db, &sent, now_ms).await?;
    Ok(sent.len())
}
