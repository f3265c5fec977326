//! Lost messages: a `queued` or `retrying` job whose message was sent (`sent_at` set) yet has
//! not been claimed `STRANDED_AFTER_SECS` after it was due, and as long after its last recorded
//! send, has lost its message: the queue dropped it (past its DLQ's retries, or while D1 was
//! down for longer than the consumer's backoff outlasts). Nothing else would ever send it, so
//! it is sent again and the send recorded: at most one message per bound. If the first message
//! was only slow (a backlog deeper than the bound), the duplicate is harmless: the consumer's
//! claim is a compare-and-set, so one message runs the job and the other is acked as
//! `finished`, `lease_held` or `duplicate`. Jobs held by a pause are left to the resume.
//! Pages through a backlog within the tick.

use jobs_store::jobs::job_list_stranded;
use serde_json::Value;

use super::paging;
use super::tick::Tick;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    let cutoff_ms = tick.now_ms - tick.config.stranded_after_ms;
    paging::resend_pages(tick, |page| job_list_stranded(tick.db, cutoff_ms, page)).await
}
