//! Hands written jobs to their family's queue, through the Workers' one send path
//! (`jobs_shared::runtime::queue_send`: one sendBatch per family per 100 messages).

use jobs_shared::retry::retry_policy::{plan_delivery_at, DeliveryPlan, QueueDelayLimit};
use jobs_shared::runtime::queue_send::{send_to, Destination, Outgoing};
use jobs_store::jobs::Unsent;
use worker::Env;

/// A job's message, read back from D1 (`Unsent`), delayed until its `run_at`. Due beyond the
/// queue's delay `limit`, it is sent with the delay `limit` when `send_early` (the consumer
/// sends it back until it is due), or not at all: it waits in the outbox for the sweep.
pub fn outgoing(
    job: &Unsent,
    now_ms: i64,
    limit: QueueDelayLimit,
    send_early: bool,
) -> Option<Outgoing> {
    let delay_secs = match plan_delivery_at(job.run_at, now_ms, limit) {
        DeliveryPlan::Send { delay_secs } => delay_secs,
        DeliveryPlan::SendLater { .. } if send_early => limit.secs(),
        DeliveryPlan::SendLater { .. } => return None,
    };
    Outgoing::stored(job.stored(), delay_secs)
}

/// Sends messages to their family's lane (see `queue_send`). The jobs must already be in the
/// outbox (`sent_at` NULL), so a failed send loses nothing. Returns the ids of the jobs whose
/// messages the queues accepted.
pub async fn send_all(env: &Env, outgoing: &[Outgoing]) -> Vec<String> {
    send_to(env, outgoing, Destination::Lanes).await
}
