//! Escalation of dead jobs: `jobs.escalated_at` is the outbox (NULL on a dead job means not yet
//! escalated; every write that makes a job dead clears it). The families escalated one by one
//! are claimed a page at a time; the digested ones by day, with `escalation_digests`. Reads
//! go through `jobs_escalation_due`, whose condition the statements repeat.

use jobs_shared::job::family::{Escalation, Family};
use jobs_shared::job::lifecycle::JobStatus::Dead;
use jobs_shared::observe::escalation::DeadJob;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::{json, num};
use crate::sql::name_list;

/// `'high', 'default', ...`: the families whose deaths are escalated one by one, or digested.
fn families_sql(digest: bool) -> String {
    name_list(
        Family::ALL
            .into_iter()
            .filter(|f| (f.escalation() == Escalation::Digest) == digest)
            .map(Family::as_str),
    )
}

/// Claims up to `limit` dead jobs of the one-by-one families, oldest death first, at `now_ms`
/// (a compare-and-set on `escalated_at IS NULL`, so overlapping ticks never both send).
pub async fn job_claim_escalation(
    db: &D1Database,
    now_ms: i64,
    limit: u32,
) -> worker::Result<Vec<DeadJob>> {
    let families = families_sql(false);
    db.prepare(format!(
        "UPDATE jobs SET escalated_at = ?1 WHERE id IN (SELECT id FROM jobs \
         WHERE status = '{Dead}' AND escalated_at IS NULL AND family IN ({families}) \
         ORDER BY finished_at LIMIT ?2) AND status = '{Dead}' AND escalated_at IS NULL \
         RETURNING id, type, family, attempts, max_attempts, runs, error_class, last_error, \
         correlation_id"
    ))
    .bind(&[num(now_ms), num(limit.into())])?
    .all()
    .await?
    .results()
}

/// Puts back the jobs claimed at `at_ms` whose send failed, for the next tick.
pub async fn job_unclaim_escalation(
    db: &D1Database,
    ids: &[&str],
    at_ms: i64,
) -> worker::Result<()> {
    db.prepare(format!(
        "UPDATE jobs SET escalated_at = NULL WHERE id IN (SELECT value FROM json_each(?1)) \
         AND +status = '{Dead}' AND escalated_at = ?2"
    ))
    .bind(&[json(ids), num(at_ms)])?
    .run()
    .await?;
    Ok(())
}

/// One day's digest as the sweep writes it at `at_ms`: the jobs that died before `before_ms`
/// (the day's end) and were not escalated yet. Its statements bind `?1` day, `?2` before,
/// `?3` at.
pub struct Digest<'a> {
    pub day: &'a str,
    pub before_ms: i64,
    pub at_ms: i64,
}

impl Digest<'_> {
    pub(crate) fn params(&self) -> [JsValue; 3] {
        [
            JsValue::from_str(self.day),
            num(self.before_ms),
            num(self.at_ms),
        ]
    }
}

/// The jobs a digest covers (see [`Digest`] for its parameters).
pub(crate) fn digest_pending_sql() -> String {
    let families = families_sql(true);
    format!(
        "status = '{Dead}' AND escalated_at IS NULL AND family IN ({families}) AND finished_at < ?2"
    )
}

/// The digest's lines: its jobs counted by family, type and error class, the most first
/// (rows: shared `DigestLine`).
pub fn job_list_digest_lines(
    db: &D1Database,
    digest: &Digest,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT ?1 AS day, ?3 AS at, family, type, error_class, COUNT(*) AS count, \
         MAX(last_error) AS example FROM jobs WHERE {} \
         GROUP BY family, type, error_class ORDER BY count DESC, type",
        digest_pending_sql()
    ))
    .bind(&digest.params())
}

/// Marks the digest's jobs escalated, only if this digest's claim wrote the day's row.
pub fn job_mark_digested(db: &D1Database, digest: &Digest) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "UPDATE jobs SET escalated_at = ?3 WHERE {} AND EXISTS \
         (SELECT 1 FROM escalation_digests WHERE day = ?1 AND sent_at = ?3)",
        digest_pending_sql()
    ))
    .bind(&digest.params())
}

/// Undoes [`job_mark_digested`] after a failed send.
pub fn job_unclaim_digest(db: &D1Database, digest: &Digest) -> worker::Result<D1PreparedStatement> {
    let families = families_sql(true);
    db.prepare(format!(
        "UPDATE jobs SET escalated_at = NULL WHERE status = '{Dead}' AND escalated_at = ?1 \
         AND family IN ({families})"
    ))
    .bind(&[num(digest.at_ms)])
}
