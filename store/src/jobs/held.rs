//! Jobs held by a pause (`held_at` set): the consumer marks them instead of claiming them, and
//! a resume (a page in the request) or the sweep (`held_job_releaser`) puts those no pause
//! covers any more back in the outbox, with this one statement.

use jobs_shared::job::pause::PauseTarget;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use super::unsent::UNSENT_COLUMNS;
use crate::d1::num;
use crate::sql::PAUSED_JOB_SQL;

/// Held jobs no pause covers (any more), of `target`'s jobs when given (then with one `?` for
/// its name): the column is picked from a validated kind, never input.
pub(crate) fn releasable(target: Option<&PauseTarget>) -> String {
    let scope = match target {
        Some(t) if t.kind == "type" => " AND jobs.type = ?",
        Some(_) => " AND jobs.family = ?",
        None => "",
    };
    format!("held_at IS NOT NULL AND NOT {PAUSED_JOB_SQL}{scope}")
}

/// Puts up to `limit` releasable held jobs (of `target`'s, when given) back in the outbox,
/// oldest hold first, returning them (rows: `Unsent`) to be sent.
pub fn job_release_held(
    db: &D1Database,
    target: Option<&PauseTarget>,
    now_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    let mut values = vec![num(now_ms)];
    values.extend(target.map(|t| JsValue::from_str(&t.name)));
    values.push(num(limit.into()));
    db.prepare(format!(
        "UPDATE jobs SET held_at = NULL, sent_at = NULL, updated_at = ? WHERE id IN \
         (SELECT id FROM jobs WHERE {} ORDER BY held_at LIMIT ?) RETURNING {UNSENT_COLUMNS}",
        releasable(target)
    ))
    .bind(&values)
}
