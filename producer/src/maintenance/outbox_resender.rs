//! The outbox: a `queued` job with no send recorded (`sent_at` NULL) for longer than
//! `OUTBOX_GRACE_SECS` was written but maybe never sent (the send failed, or the Worker died
//! between the D1 write and the send). The happy path records no send until a consumer
//! claims the job, hence the grace. Each re-send is recorded, so a job is re-sent once,
//! not every tick; a duplicate message is harmless (the claim is a compare-and-set).

use jobs_shared::JobStatus;
use serde_json::{json, Value};

use super::job_sender;
use super::Tick;
use crate::dispatch::{Unsent, UNSENT_COLUMNS};
use crate::job_store::num;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    let queued = JobStatus::Queued.as_str();
    let unsent: Vec<Unsent> = tick
        .db
        .prepare(format!(
            "SELECT {UNSENT_COLUMNS} FROM jobs WHERE status = '{queued}' AND sent_at IS NULL \
             AND updated_at <= ?1 ORDER BY run_at LIMIT ?2"
        ))
        .bind(&[
            num(tick.now_ms - tick.config.outbox_grace_ms),
            num(tick.config.batch.into()),
        ])?
        .all()
        .await?
        .results()?;
    let sent = job_sender::send(tick, &unsent).await?;
    Ok(json!({ "found": unsent.len(), "sent": sent }))
}
