//! Sending when due: a job due further out than a queue can delay a message
//! (`QUEUE_MAX_DELAY_SECS`, default 12 h) waits in D1 with no message: `scheduled` from enqueue,
//! or `retrying` after a long backoff. Once it is due within the limit it is sent with the delay
//! that remains, so any delay works, an hour or a year. `scheduled` becomes `queued` before the
//! send (a failed send leaves it in the outbox for the re-sender); a `retrying` job sent later stays
//! `retrying`, claimable as is, and is sent again by the next tick until a send is recorded.
//! Pages through a backlog within the tick (`paging.rs`).

use jobs_shared::job::lifecycle::JobStatus;
use jobs_store::jobs::{job_schedule, Unsent};
use serde_json::{json, Value};

use super::job_sender;
use super::paging::{self, Page};
use super::tick::Tick;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    paging::pages(tick, || page(tick)).await
}

async fn page(tick: &Tick<'_>) -> worker::Result<Page> {
    debug_assert!(jobs_shared::job::lifecycle::can_transition(
        JobStatus::Scheduled,
        JobStatus::Queued
    ));
    let horizon = tick.now_ms + i64::from(tick.queue_limit.secs()) * 1000;
    let statements = job_schedule(tick.db, tick.now_ms, horizon, tick.config.page)?;
    let results = tick.db.batch(statements.into()).await?;
    let mut due: Vec<Unsent> = results[0].results()?;
    let released = due.len();
    due.extend(results[1].results::<Unsent>()?);
    let sent = job_sender::send(tick, &due).await?;
    let retrying = due.len() - released;
    Ok(Page {
        rows: released.max(retrying),
        // An unsent retry would be found again; an unsent release waits in the outbox.
        all_sent: sent == due.len(),
        report: json!({ "scheduled": released, "retrying": retrying, "sent": sent }),
    })
}
