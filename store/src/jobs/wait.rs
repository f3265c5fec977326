//! A workflow's waits on `jobs` (docs/app-guide.md "Workflows", shared `job::workflow_wait`): an
//! event the app posts resumes the waits for its event and key, found through `jobs_waits`.

use jobs_shared::job::workflow_wait::Event;
use worker::{D1Database, D1PreparedStatement};

use super::unsent::Unsent;

/// The waits for `event` that still wait (`scheduled` in D1, or `queued` with their timeout's
/// message delayed in the queue) and have not received one, of `owner`'s (the name of the token
/// that enqueued them; `None`: anyone's): given the event's data, due now and back in the outbox
/// to be sent (rows: [`Unsent`]). A wait already running at its timeout is not resumed.
pub fn job_resume_waits(
    db: &D1Database,
    event: &Event,
    owner: Option<&str>,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    sql!(db, Unsent =>
        "UPDATE jobs INDEXED BY jobs_waits SET status = 'queued', run_at = ?4, sent_at = NULL, \
         updated_at = ?4, payload = json_set(payload, '$.received', json(?3)) \
         WHERE wait_for IS NOT NULL AND wait_for = json_array(?1, ?2) \
         AND status IN ('scheduled', 'queued') AND json_type(payload, '$.received') IS NULL \
         AND (?5 IS NULL OR enqueued_by = ?5) \
         RETURNING id, type AS job_type, family, priority, run_at, correlation_id",
        event.event.as_str(),
        event.key.as_str(),
        event.data.as_str(),
        now_ms,
        owner
    )
}
