//! Workflow groups whose branches have all ended (or, failing fast, one failed) but that no
//! consumer batch made due: the last branch ended on a path that does not join (an operator's
//! move, an expiry or lost attempt the claim found, a DLQ arrival). Made due and sent here, so
//! no group waits past a tick for a join (docs/app-guide.md "Workflows"). The statement is the
//! consumer's own (`jobs_store::jobs::job_join_groups`). Pages through a backlog within the
//! tick.

use jobs_store::jobs::{job_join_groups, Unsent};
use serde_json::{json, Value};

use super::job_sender;
use super::paging::{self, Page};
use super::tick::Tick;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    paging::pages(tick, || page(tick)).await
}

/// One page: its groups are due whatever their sends do (a failed send leaves a group in the
/// outbox), so the next page finds others.
async fn page(tick: &Tick<'_>) -> worker::Result<Page> {
    let join = job_join_groups(tick.db, None, tick.now_ms, tick.config.page)?;
    let joined: Vec<Unsent> = join.all().await?.results()?;
    let sent = job_sender::send(tick, &joined).await?;
    Ok(Page {
        rows: joined.len(),
        all_sent: true,
        report: json!({ "joined": joined.len(), "sent": sent }),
    })
}
