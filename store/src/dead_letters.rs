//! The `dead_letters` table: every DLQ arrival, listed with its job (the admin's dead-letter
//! list counts them per job), never a job's state.

use jobs_shared::job::family::Family;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::num;

/// One row per arrival in `arrivals` (a JSON array of `{"id", "attempts"}`) on `family`'s DLQ.
pub fn dead_letter_insert_many(
    db: &D1Database,
    arrivals: &JsValue,
    family: Family,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(
        "INSERT INTO dead_letters (job_id, family, arrived_at, delivery_attempts) \
         SELECT json_extract(value, '$.id'), ?3, ?1, json_extract(value, '$.attempts') \
         FROM json_each(?2)",
    )
    .bind(&[num(now_ms), arrivals.clone(), family.as_str().into()])
}
