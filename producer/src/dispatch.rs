//! Hands written jobs to their family's queue: one sendBatch per family.

use jobs_shared::{Delivery, Family, JobMessage, NewJob};
use worker::{BatchMessageBuilder, Env, MessageBuilder};

/// Sends each job's message (delayed where the job asked for it). A failed send is logged and
/// left alone: the job is already in D1 in the outbox, and the sweep re-sends it.
pub async fn send(env: &Env, jobs: &[&NewJob]) {
    for family in Family::ALL {
        let messages: Vec<_> = jobs
            .iter()
            .filter(|job| job.family == family)
            .filter_map(|job| match job.delivery {
                Delivery::Send { delay_secs } => Some(
                    MessageBuilder::new(JobMessage::new(&job.id, job.job_type))
                        .delay_seconds(delay_secs)
                        .build(),
                ),
                Delivery::Hold { .. } => None,
            })
            .collect();
        if messages.is_empty() {
            continue;
        }
        let count = messages.len();
        let sent = match env.queue(family.queue_binding()) {
            Ok(queue) => {
                queue
                    .send_batch(BatchMessageBuilder::new().messages(messages).build())
                    .await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = sent {
            worker::console_error!(
                "send of {count} {} job(s) failed, left in the outbox: {e}",
                family.as_str()
            );
        }
    }
}
