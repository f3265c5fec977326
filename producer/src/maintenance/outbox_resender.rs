//! The outbox: a `queued` job with no send recorded (`sent_at` NULL) for longer than
//! `OUTBOX_GRACE_SECS` after its message was due was written but maybe never sent (the send
//! failed, or the Worker died between the D1 write and the send), or its message was lost (the
//! DLQ consumer put it back). The happy path records no send until a consumer claims the job,
//! hence the grace, counted from the later of its last write and its due time: a job sent
//! with a queue delay is not due before `run_at`, so it is not missing before then either.
//! Each re-send is recorded, so a job is re-sent once, not every tick; a duplicate message is
//! harmless (the claim is a compare-and-set). Pages through a backlog within the tick.

use jobs_store::jobs::job_list_unsent;
use serde_json::Value;

use super::paging;
use super::tick::Tick;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    let cutoff_ms = tick.now_ms - tick.config.outbox_grace_ms;
    paging::resend_pages(tick, |page| job_list_unsent(tick.db, cutoff_ms, page)).await
}
