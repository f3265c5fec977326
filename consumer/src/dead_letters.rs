//! The dead-letter side: sending jobs that went `dead` to their family's DLQ, and consuming the
//! DLQs: every arrival is listed, and a job whose message the queue gave up on by itself (its
//! max_retries safety net) is sent again, never killed while it has attempts left.

use jobs_shared::job::envelope::JobMessage;
use jobs_shared::job::family::{Family, Lane};
use jobs_shared::observe::log_line::{emit, event_line, fault, LogLevel};
use jobs_shared::retry::d1_retry::d1_retry_secs;
use jobs_shared::runtime::clock::now_ms;
use jobs_shared::runtime::queue_send::{send_to, Destination, Outgoing};
use jobs_store::dead_letters::{arrivals_json, dead_letter_insert_many, Arrival};
use jobs_store::jobs::job_settle_dlq_arrivals;
use jobs_store::metric_counters::{metric_counter_add, DEAD_LETTERS};
use serde_json::{json, Value};
use worker::Env;

use crate::delivery::Delivery;

/// Sends dead jobs to the family DLQ, then acks their messages. D1 already says `dead`; if the
/// DLQ send fails the messages are acked anyway (the DLQ is a notification, D1 the record).
pub async fn send(family: Family, dead: &[(&Delivery, JobMessage)], env: &Env) {
    let outgoing: Vec<Outgoing> = dead
        .iter()
        .map(|(_, message)| Outgoing {
            family,
            lane: Lane::Normal,
            message: message.clone(),
            delay_secs: 0,
        })
        .collect();
    send_to(env, &outgoing, Destination::DeadLetters).await;
    dead.iter().for_each(|(d, _)| d.ack());
}

/// A DLQ batch, in one D1 batch. A DLQ arrival means the queue gave up on one message, not
/// that the job is over: it may have been replayed, be running under another message, or be
/// waiting for its next attempt. So every arrival is listed in `dead_letters`, and only a job
/// that waits for a message (`queued` or `retrying`, not held by a pause) is touched: its
/// message is gone, so it goes back to the outbox (`sent_at` NULL, `run_at` kept) for the
/// sweep to send again (docs/guarantees.md "Guarantees and how they hold"), or `dead`
/// (delivery_exhausted) if it has no attempt left. A finished, running or scheduled job is left as
/// it is.
pub async fn record(family: Family, deliveries: &[Delivery], env: &Env) {
    let arrivals: Vec<Arrival> = deliveries
        .iter()
        .filter_map(|d| {
            d.job_id().map(|id| Arrival {
                id,
                attempts: d.delivery_attempts,
            })
        })
        .collect();
    let arrivals = arrivals_json(&arrivals);
    let now = now_ms();
    let written = async {
        let db = env.d1("DB")?;
        let [exhausted, requeue] = job_settle_dlq_arrivals(&db, &arrivals, now)?;
        let list = dead_letter_insert_many(&db, &arrivals, family, now)?;
        // GET /metrics' job_dead_letters_total, without counting the table.
        let by = deliveries.len() as i64;
        let count = metric_counter_add(&db, DEAD_LETTERS, family.as_str(), by)?;
        let results = db.batch(vec![exhausted, requeue, list, count]).await?;
        let ids = |i: usize| -> worker::Result<Vec<Value>> {
            let rows: Vec<Value> = results[i].results()?;
            Ok(rows
                .into_iter()
                .filter_map(|r| r.get("id").cloned())
                .collect())
        };
        Ok::<_, worker::Error>((ids(0)?, ids(1)?))
    };
    match written.await {
        Ok((dead, requeued)) => {
            let fields = json!({
                "queue": family.dlq_name(), "arrivals": deliveries.len(),
                "requeued": requeued, "dead": dead,
            });
            emit(&event_line("dead_letters.received", LogLevel::Info, fields));
            deliveries.iter().for_each(Delivery::ack)
        }
        Err(e) => {
            let message = format_args!("recording DLQ arrivals failed, retried with backoff: {e}");
            fault(LogLevel::Error, "dead_letters", message);
            for delivery in deliveries {
                delivery.retry(d1_retry_secs(delivery.delivery_attempts));
            }
        }
    }
}
