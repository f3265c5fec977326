//! The `escalation_digests` table: one row per UTC day whose deaths (of the digested families)
//! were sent as one message. Writing the row is the claim: a day is sent once, and a failed
//! send deletes it again for the next tick.

use worker::{D1Database, D1PreparedStatement};

use crate::jobs::Digest;

/// Whether `day`'s digest was written already.
pub async fn escalation_digest_exists(db: &D1Database, day: &str) -> worker::Result<bool> {
    let rows: Vec<serde_json::Value> =
        sql!(db, "SELECT day FROM escalation_digests WHERE day = ?1", day)?
            .all()
            .await?
            .results()?;
    Ok(!rows.is_empty())
}

/// The claim: the day's row, counting its jobs (those `jobs::job_list_digest_lines` lists),
/// unless it exists.
pub fn escalation_digest_insert(
    db: &D1Database,
    digest: &Digest,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "INSERT INTO escalation_digests (day, sent_at, jobs) \
         SELECT ?1, ?3, COUNT(*) FROM jobs \
         WHERE status = 'dead' AND escalated_at IS NULL AND family IN ('low', 'bulk') \
         AND finished_at < ?2 ON CONFLICT DO NOTHING",
        digest.day,
        digest.before_ms,
        digest.at_ms
    )
}

/// The day's row if this digest wrote it (rows: `day`): only then are its jobs this tick's.
pub fn escalation_digest_owned(
    db: &D1Database,
    digest: &Digest,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "SELECT day FROM escalation_digests WHERE day = ?1 AND sent_at = ?2",
        digest.day,
        digest.at_ms
    )
}

/// Undoes the claim after a failed send.
pub fn escalation_digest_delete(
    db: &D1Database,
    digest: &Digest,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "DELETE FROM escalation_digests WHERE day = ?1 AND sent_at = ?2",
        digest.day,
        digest.at_ms
    )
}
