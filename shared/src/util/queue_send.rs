//! The Workers' one way onto a queue (enqueue, the sweep's re-sends, a chain's next steps, dead
//! jobs to their DLQ): one sendBatch per family per 100 messages, never one subrequest per
//! message. The jobs are always in D1 before they are sent, so a failed send is logged and
//! loses nothing: what was not accepted stays in the outbox for the sweep (or, for a DLQ, is
//! dead in D1 already). Both Workers read the queues' delay limit here too.

use worker::{console_error, console_warn, BatchMessageBuilder, Env, MessageBuilder};

use crate::{DeliveryPlan, Family, JobMessage, NewJob, QueueDelayLimit};

/// `QUEUE_MAX_DELAY_SECS` (see [`QueueDelayLimit`]); a bad value is logged and the default used.
pub fn queue_delay_limit(env: &Env) -> QueueDelayLimit {
    let (limit, warnings) =
        QueueDelayLimit::from_vars(|name| env.var(name).ok().map(|v| v.to_string()));
    for warning in warnings {
        console_warn!("config: {warning}");
    }
    limit
}

/// Cloudflare Queues' sendBatch limit.
const MAX_SEND_BATCH: usize = 100;

/// One job's message for its next run.
pub struct Outgoing {
    pub family: Family,
    pub message: JobMessage,
    pub delay_secs: u32,
}

impl Outgoing {
    /// A message for a job just accepted (enqueued, or a chain's next step); None when it is
    /// held in D1 until the sweep sends it.
    pub fn new_job(job: &NewJob, correlation_id: &str) -> Option<Outgoing> {
        let DeliveryPlan::Send { delay_secs } = job.delivery else {
            return None;
        };
        Some(Outgoing {
            family: job.family,
            message: JobMessage::stored(&job.id, job.job_type.as_str(), Some(correlation_id)),
            delay_secs,
        })
    }

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

/// Sends messages to the queue `binding` names for each family (its job queue or its DLQ), at
/// most 100 per sendBatch; a failed send is logged. Returns the ids the queues accepted.
pub async fn send_to(
    env: &Env,
    outgoing: &[Outgoing],
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
                Err(e) => {
                    let ids: Vec<&str> = chunk.iter().map(|o| o.message.id.as_str()).collect();
                    console_error!(
                        "send of {} {} message(s) to {} failed: {e}; jobs {}",
                        chunk.len(),
                        family.as_str(),
                        binding(family),
                        ids.join(", ")
                    );
                }
            }
        }
    }
    accepted
}
