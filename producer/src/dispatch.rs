//! Hands written jobs to their family's queue: one sendBatch per family (per 100 messages).

use jobs_shared::{Delivery, Family, JobMessage, NewJob};
use worker::{BatchMessageBuilder, Env, MessageBuilder};

/// Sends each job's message (delayed where the job asked for it). A failed send is logged and
/// left alone: the job is already in D1 in the outbox, and the sweep re-sends it.
pub async fn send(env: &Env, jobs: &[&NewJob], correlation_id: &str) {
    let outgoing = jobs
        .iter()
        .filter_map(|job| match job.delivery {
            Delivery::Send { delay_secs } => Some(Outgoing {
                family: job.family,
                message: JobMessage::stored(&job.id, job.job_type.as_str(), Some(correlation_id)),
                delay_secs,
            }),
            Delivery::Hold { .. } => None,
        })
        .collect();
    send_all(env, outgoing).await;
}

/// One job's message for its next run.
pub struct Outgoing {
    pub family: Family,
    pub message: JobMessage,
    pub delay_secs: u32,
}

impl Outgoing {
    /// A message for a job read back from D1 (type and family as stored); None for a family
    /// this build does not know.
    pub fn stored(
        id: &str,
        job_type: &str,
        family: &str,
        delay_secs: u32,
        correlation_id: Option<&str>,
    ) -> Option<Outgoing> {
        Some(Outgoing {
            family: Family::parse(family)?,
            message: JobMessage::stored(id, job_type, correlation_id),
            delay_secs,
        })
    }
}

/// Sends messages to their family's queue in sendBatch calls of at most 100 (the queue's batch
/// limit). The jobs must already be in the outbox (`sent_at` NULL), so a failed send loses
/// nothing. Returns the ids of the jobs whose messages the queues accepted.
pub async fn send_all(env: &Env, outgoing: Vec<Outgoing>) -> Vec<String> {
    send_to(env, outgoing, Family::queue_binding).await
}

/// Sends messages to the queue `binding` names for each family (its job queue or its DLQ), at
/// most 100 per sendBatch; a failed send is logged. Returns the ids the queues accepted.
pub async fn send_to(
    env: &Env,
    outgoing: Vec<Outgoing>,
    binding: fn(Family) -> &'static str,
) -> Vec<String> {
    let mut accepted = Vec::with_capacity(outgoing.len());
    for family in Family::ALL {
        let of_family: Vec<&Outgoing> = outgoing.iter().filter(|o| o.family == family).collect();
        for chunk in of_family.chunks(MAX_SEND_BATCH) {
            let messages: Vec<_> = chunk
                .iter()
                .map(|o| {
                    MessageBuilder::new(o.message.clone())
                        .delay_seconds(o.delay_secs)
                        .build()
                })
                .collect();
            let count = messages.len();
            let sent = match env.queue(binding(family)) {
                Ok(queue) => {
                    queue
                        .send_batch(BatchMessageBuilder::new().messages(messages).build())
                        .await
                }
                Err(e) => Err(e),
            };
            match sent {
                Ok(()) => accepted.extend(chunk.iter().map(|o| o.message.id.clone())),
                Err(e) => worker::console_error!(
                    "send of {count} {} message(s) to {} failed: {e}",
                    family.as_str(),
                    binding(family)
                ),
            }
        }
    }
    accepted
}

/// Cloudflare Queues' sendBatch limit.
const MAX_SEND_BATCH: usize = 100;
