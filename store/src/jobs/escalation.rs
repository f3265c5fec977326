//! Escalation of dead jobs: `jobs.escalated_at` is the outbox (NULL on a dead job means not yet
//! escalated; every write that makes a job dead clears it). The families escalated one by one
//! (high, default, screenshot) are claimed a page at a time; the digested ones (low, bulk) by
//! day, with `escalation_digests` (shared `Family::escalation`). Reads go through
//! `jobs_escalation_due`, whose condition (`status = 'dead' AND escalated_at IS NULL`) the
//! statements repeat.

use jobs_shared::observe::escalation::DeadJob;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::json_text;

/// Claims up to `limit` dead jobs of the one-by-one families, oldest death first, at `now_ms`
/// (a compare-and-set on `escalated_at IS NULL`, so overlapping ticks never both send).
pub async fn job_claim_escalation(
    db: &D1Database,
    now_ms: i64,
    limit: u32,
) -> worker::Result<Vec<DeadJob>> {
    // Rows as shared `DeadJob` reads them (`type`): not checked as a row.
    sql!(
        db,
        "UPDATE jobs SET escalated_at = ?1 WHERE id IN (SELECT id FROM jobs \
         WHERE status = 'dead' AND escalated_at IS NULL \
         AND family IN ('high', 'default', 'screenshot') \
         ORDER BY finished_at LIMIT ?2) AND status = 'dead' AND escalated_at IS NULL \
         RETURNING id, type, family, attempts, max_attempts, runs, error_class, last_error, \
         correlation_id",
        now_ms,
        limit
    )?
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
    let ids = json_text(ids);
    sql!(
        db,
        "UPDATE jobs SET escalated_at = NULL WHERE id IN (SELECT value FROM json_each(?1)) \
         AND +status = 'dead' AND escalated_at = ?2",
        &ids,
        at_ms
    )?
    .run()
    .await?;
    Ok(())
}

/// One day's digest as the sweep writes it at `at_ms`: the jobs of the digested families that
/// died before `before_ms` (the day's end) and were not escalated yet. Its statements bind
/// `?1` day, `?2` before, `?3` at.
pub struct Digest<'a> {
    pub day: &'a str,
    pub before_ms: i64,
    pub at_ms: i64,
}

/// The digest's lines: its jobs counted by family, type and error class, the most first
/// (rows: shared `DigestLine`, which reads `type`: not checked as a row).
pub fn job_list_digest_lines(
    db: &D1Database,
    digest: &Digest,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "SELECT ?1 AS \"day!: String\", ?3 AS \"at!: i64\", family, type, error_class, \
         COUNT(*) AS \"count!: i64\", MAX(last_error) AS \"example?: String\" FROM jobs \
         WHERE status = 'dead' AND escalated_at IS NULL AND family IN ('low', 'bulk') \
         AND finished_at < ?2 \
         GROUP BY family, type, error_class ORDER BY COUNT(*) DESC, type",
        digest.day,
        digest.before_ms,
        digest.at_ms
    )
}

/// Marks the digest's jobs escalated, only if this digest's claim wrote the day's row.
pub fn job_mark_digested(db: &D1Database, digest: &Digest) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "UPDATE jobs SET escalated_at = ?3 \
         WHERE status = 'dead' AND escalated_at IS NULL AND family IN ('low', 'bulk') \
         AND finished_at < ?2 AND EXISTS \
         (SELECT 1 FROM escalation_digests WHERE day = ?1 AND sent_at = ?3)",
        digest.day,
        digest.before_ms,
        digest.at_ms
    )
}

/// Undoes [`job_mark_digested`] after a failed send.
pub fn job_unclaim_digest(db: &D1Database, digest: &Digest) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "UPDATE jobs SET escalated_at = NULL WHERE status = 'dead' AND escalated_at = ?1 \
         AND family IN ('low', 'bulk')",
        digest.at_ms
    )
}

#[cfg(test)]
mod tests {
    use jobs_shared::job::family::{Escalation, Family};

    /// `family IN (...)` of the families escalated one by one, or digested, as written out.
    fn families(digest: bool) -> String {
        let names: Vec<String> = Family::ALL
            .into_iter()
            .filter(|f| (f.escalation() == Escalation::Digest) == digest)
            .map(|f| format!("'{}'", f.as_str()))
            .collect();
        format!("family IN ({})", names.join(", "))
    }

    #[test]
    fn the_statements_name_the_families_each_way_escalates() {
        let all = [
            include_str!("escalation.rs"),
            include_str!("../escalation_digests.rs"),
        ]
        .map(crate::sql::written)
        .concat();
        let (each, digest) = (families(false), families(true));
        assert_eq!(all.matches(&each).count(), 1, "{each}");
        assert_eq!(all.matches(&digest).count(), 4, "{digest}");
    }
}
