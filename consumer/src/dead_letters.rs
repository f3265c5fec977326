//! The dead-letter side: sending jobs that went `dead` to their family's DLQ, and consuming the
//! DLQs so that what arrives there by another path (the queue's own max_retries safety net)
//! is recorded as dead too: D1 always agrees with the DLQ.

use jobs_shared::queue_send::{send_to, Outgoing};
use jobs_shared::{sql_in_list, Family, JobMessage, JobStatus};
use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use worker::{console_error, Env};

use crate::delivery::Delivery;
use crate::now_ms;

/// Sends dead jobs to the family DLQ, then acks their messages. D1 already says `dead`; if the
/// DLQ send fails the messages are acked anyway (the DLQ is a notification, D1 the record).
pub async fn send(family: Family, dead: &[(&Delivery, JobMessage)], env: &Env) {
    let outgoing: Vec<Outgoing> = dead
        .iter()
        .map(|(_, message)| Outgoing {
            family,
            message: message.clone(),
            delay_secs: 0,
        })
        .collect();
    send_to(env, &outgoing, Family::dlq_binding).await;
    dead.iter().for_each(|(d, _)| d.ack());
}

/// A DLQ batch, in one D1 batch: every job still live is marked dead (delivery_exhausted), and
/// every arrival is listed in `dead_letters`.
pub async fn record(family: Family, deliveries: &[Delivery], env: &Env) {
    let arrivals: Vec<_> = deliveries
        .iter()
        .filter_map(|d| {
            d.job_id()
                .map(|id| json!({ "id": id, "attempts": d.delivery_attempts }))
        })
        .collect();
    let arrivals = JsValue::from_str(&Value::Array(arrivals).to_string());
    let now = JsValue::from_f64(now_ms() as f64);
    let live = sql_in_list(&JobStatus::live());
    let written =
        async {
            let db = env.d1("DB")?;
            let mark_dead = db
                .prepare(format!(
                    "UPDATE jobs SET status = 'dead', error_class = 'delivery_exhausted', \
                 last_error = 'the queue gave up delivering this job (max_retries)', \
                 finished_at = ?1, updated_at = ?1, lease_until = NULL, escalated_at = NULL \
                 WHERE id IN (SELECT json_extract(value, '$.id') FROM json_each(?2)) \
                 AND +status IN ({live})"
                ))
                .bind(&[now.clone(), arrivals.clone()])?;
            let list = db
                .prepare(
                    "INSERT INTO dead_letters (job_id, family, arrived_at, delivery_attempts) \
                 SELECT json_extract(value, '$.id'), ?3, ?1, json_extract(value, '$.attempts') \
                 FROM json_each(?2)",
                )
                .bind(&[now, arrivals, family.as_str().into()])?;
            // GET /metrics' job_dead_letters_total, without counting the table.
            let count = db
            .prepare(
                "INSERT INTO metric_counters (name, label, value) VALUES ('dead_letters', ?1, ?2) \
                 ON CONFLICT (name, label) DO UPDATE SET value = value + excluded.value",
            )
            .bind(&[family.as_str().into(), JsValue::from_f64(deliveries.len() as f64)])?;
            db.batch(vec![mark_dead, list, count]).await
        };
    match written.await {
        Ok(_) => deliveries.iter().for_each(Delivery::ack),
        Err(e) => {
            console_error!("recording DLQ arrivals failed, retried: {e}");
            deliveries.iter().for_each(|d| d.retry(60));
        }
    }
}
