//! What a DLQ arrival does to its job. An arrival means the queue gave up on one message, not
//! that the job is over, so only a job that waits for a message (`queued` or `retrying`, not
//! held by a pause) is touched: back to the outbox (`sent_at` NULL, `run_at` kept) for the
//! sweep to send again, or `dead` (delivery_exhausted) if it has no attempt left.

use jobs_shared::job::lifecycle::JobStatus::Dead;
use jobs_shared::retry::error_class::ErrorClass::DeliveryExhausted;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::num;
use crate::sql::waiting;

/// The two statements for `arrivals` (a JSON array of `{"id", "attempts"}`), each returning the
/// ids it touched: the jobs made dead, then the jobs put back in the outbox.
pub fn job_settle_dlq_arrivals(
    db: &D1Database,
    arrivals: &JsValue,
    now_ms: i64,
) -> worker::Result<[D1PreparedStatement; 2]> {
    let now = num(now_ms);
    let waiting = waiting();
    let arrived = format!(
        "id IN (SELECT json_extract(value, '$.id') FROM json_each(?2)) \
         AND +status IN ({waiting}) AND held_at IS NULL"
    );
    let exhausted = db
        .prepare(format!(
            "UPDATE jobs SET status = '{Dead}', error_class = '{DeliveryExhausted}', \
             last_error = 'the queue gave up delivering this job and it has no attempt left', \
             finished_at = ?1, updated_at = ?1, lease_until = NULL, escalated_at = NULL \
             WHERE {arrived} AND attempts >= max_attempts RETURNING id"
        ))
        .bind(&[now.clone(), arrivals.clone()])?;
    let requeue = db
        .prepare(format!(
            "UPDATE jobs SET sent_at = NULL, updated_at = ?1 WHERE {arrived} RETURNING id"
        ))
        .bind(&[now, arrivals.clone()])?;
    Ok([exhausted, requeue])
}
