//! The `escalation_digests` table: one row per UTC day whose deaths (of the digested families)
//! were sent as one message. Writing the row is the claim: a day is sent once, and a failed
//! send deletes it again for the next tick.

use serde_json::Value;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::num;
use crate::jobs::{digest_pending_sql, Digest};

/// Whether `day`'s digest was written already.
pub async fn escalation_digest_exists(db: &D1Database, day: &str) -> worker::Result<bool> {
    let rows: Vec<Value> = db
        .prepare("SELECT day FROM escalation_digests WHERE day = ?1")
        .bind(&[JsValue::from_str(day)])?
        .all()
        .await?
        .results()?;
    Ok(!rows.is_empty())
}

/// The claim: the day's row, counting its jobs, unless it exists.
pub fn escalation_digest_insert(
    db: &D1Database,
    digest: &Digest,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "INSERT INTO escalation_digests (day, sent_at, jobs) \
         SELECT ?1, ?3, COUNT(*) FROM jobs WHERE {} ON CONFLICT DO NOTHING",
        digest_pending_sql()
    ))
    .bind(&digest.params())
}

/// The day's row if this digest wrote it (rows: `day`): only then are its jobs this tick's.
pub fn escalation_digest_owned(
    db: &D1Database,
    digest: &Digest,
) -> worker::Result<D1PreparedStatement> {
    db.prepare("SELECT day FROM escalation_digests WHERE day = ?1 AND sent_at = ?2")
        .bind(&[JsValue::from_str(digest.day), num(digest.at_ms)])
}

/// Undoes the claim after a failed send.
pub fn escalation_digest_delete(
    db: &D1Database,
    digest: &Digest,
) -> worker::Result<D1PreparedStatement> {
    db.prepare("DELETE FROM escalation_digests WHERE day = ?1 AND sent_at = ?2")
        .bind(&[JsValue::from_str(digest.day), num(digest.at_ms)])
}
