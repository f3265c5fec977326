//! Held jobs whose pause is gone: a resume releases one page of its held jobs in the request
//! (bounded whatever it held); the rest are released here, back to the outbox and sent, due
//! when each job is due. The statement is the resume's own (`jobs_store::pauses`). Pages
//! through a backlog within the tick.

use jobs_store::jobs::{job_release_held, Unsent};
use serde_json::{json, Value};

use super::job_sender;
use super::paging::{self, Page};
use super::tick::Tick;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    paging::pages(tick, || page(tick)).await
}

/// One page: its jobs are no longer held whatever their sends do (a failed send leaves a job
/// in the outbox), so the next page finds others.
async fn page(tick: &Tick<'_>) -> worker::Result<Page> {
    let release = job_release_held(tick.db, None, tick.now_ms, tick.config.page)?;
    let released: Vec<Unsent> = release.all().await?.results()?;
    let sent = job_sender::send(tick, &released).await?;
    Ok(Page {
        rows: released.len(),
        all_sent: true,
        report: json!({ "released": released.len(), "sent": sent }),
    })
}
