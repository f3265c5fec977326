//! The `dead_letters` table: every DLQ arrival, listed with its job (the admin's dead-letter
//! list counts them per job), never a job's state.

use jobs_shared::job::family::Family;
use serde::Serialize;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::json_text;

/// One DLQ arrival: the job its message named and the queue's delivery attempts of it. Read
/// from one JSON array ([`arrivals_json`]) by [`dead_letter_insert_many`] and
/// `jobs::job_settle_dlq_arrivals`.
#[derive(Serialize)]
pub struct Arrival<'a> {
    pub id: &'a str,
    pub attempts: u32,
}

/// `arrivals` as the one JSON array their statements bind.
pub fn arrivals_json(arrivals: &[Arrival<'_>]) -> String {
    json_text(arrivals)
}

/// One row per arrival in `arrivals` ([`arrivals_json`]) on `family`'s DLQ.
pub fn dead_letter_insert_many(
    db: &D1Database,
    arrivals: &str,
    family: Family,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "INSERT INTO dead_letters (job_id, family, arrived_at, delivery_attempts) \
         SELECT value ->> 'id', ?3, ?1, value ->> 'attempts' FROM json_each(?2)",
        now_ms,
        arrivals,
        family.as_str()
    )
}
