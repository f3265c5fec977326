//! A job's callback on `jobs` (docs/app-guide.md "Callbacks", shared `job::callback`): D1's
//! triggers write it when the job or its chain ends (migration `0029_callbacks.sql`); the record
//! that ended them reads those it wrote, to send them at once.

use jobs_shared::job::callback::ID_SUFFIX;
use worker::{D1Database, D1PreparedStatement};

use super::unsent::Unsent;
use crate::d1::json_text;

/// The callbacks of jobs `ended` (by their ids) that wait for their first send (rows:
/// [`Unsent`]).
pub fn job_list_new_callbacks(
    db: &D1Database,
    ended: &[&str],
) -> worker::Result<D1PreparedStatement> {
    let ended = json_text(ended);
    sql!(db, Unsent =>
        "SELECT id, type AS job_type, family, priority, run_at, correlation_id FROM jobs \
         WHERE id IN (SELECT value || ?2 FROM json_each(?1)) AND status = 'queued' \
         AND sent_at IS NULL",
        &ended,
        ID_SUFFIX
    )
}
