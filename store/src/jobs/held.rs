//! Jobs held by a pause (`held_at` set): the consumer marks them instead of claiming them, and
//! a resume (a page in the request) or the sweep (`held_job_releaser`) puts those no pause
//! covers any more back in the outbox, with [`job_release_held`].

use jobs_shared::job::pause::PauseTarget;
use worker::{D1Database, D1PreparedStatement};

use super::unsent::Unsent;

/// Puts up to `limit` releasable held jobs (of `target`'s, when given) back in the outbox,
/// oldest hold first, returning them (rows: [`Unsent`]) to be sent. Releasable: held, and no
/// pause covers it (any more); whether anything at all is paused is read once per statement
/// (see `job_claim`).
pub fn job_release_held(
    db: &D1Database,
    target: Option<&PauseTarget>,
    now_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    match target {
        None => sql!(db, Unsent =>
            "UPDATE jobs SET held_at = NULL, sent_at = NULL, updated_at = ?1 WHERE id IN \
             (SELECT id FROM jobs WHERE held_at IS NOT NULL AND NOT (EXISTS (SELECT 1 FROM pauses) \
             AND EXISTS (SELECT 1 FROM pauses p WHERE (p.kind = 'type' AND p.name = jobs.type) \
             OR (p.kind = 'family' AND p.name = jobs.family))) ORDER BY held_at LIMIT ?2) \
             RETURNING id, type AS job_type, family, priority, run_at, correlation_id",
            now_ms,
            limit
        ),
        Some(t) if t.kind == "type" => sql!(db, Unsent =>
            "UPDATE jobs SET held_at = NULL, sent_at = NULL, updated_at = ?1 WHERE id IN \
             (SELECT id FROM jobs WHERE held_at IS NOT NULL AND NOT (EXISTS (SELECT 1 FROM pauses) \
             AND EXISTS (SELECT 1 FROM pauses p WHERE (p.kind = 'type' AND p.name = jobs.type) \
             OR (p.kind = 'family' AND p.name = jobs.family))) AND jobs.type = ?2 \
             ORDER BY held_at LIMIT ?3) \
             RETURNING id, type AS job_type, family, priority, run_at, correlation_id",
            now_ms,
            t.name.as_str(),
            limit
        ),
        Some(t) => sql!(db, Unsent =>
            "UPDATE jobs SET held_at = NULL, sent_at = NULL, updated_at = ?1 WHERE id IN \
             (SELECT id FROM jobs WHERE held_at IS NOT NULL AND NOT (EXISTS (SELECT 1 FROM pauses) \
             AND EXISTS (SELECT 1 FROM pauses p WHERE (p.kind = 'type' AND p.name = jobs.type) \
             OR (p.kind = 'family' AND p.name = jobs.family))) AND jobs.family = ?2 \
             ORDER BY held_at LIMIT ?3) \
             RETURNING id, type AS job_type, family, priority, run_at, correlation_id",
            now_ms,
            t.name.as_str(),
            limit
        ),
    }
}
