//! The `budgets` and `budget_alerts` tables, as GET /metrics and the sweep's alerts read them.

use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::num;

/// Each job type's spend over every month (rows: `label`, `value`), for GET /metrics.
pub fn budget_spent_by_type(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    db.prepare(
        "SELECT job_type AS label, SUM(spent_cents) AS value FROM budgets GROUP BY job_type \
         ORDER BY job_type",
    )
    .bind(&[])
}

/// The budget alerts raised in `month` (rows: shared `RaisedAlert`).
pub fn budget_alert_list_month(
    db: &D1Database,
    month: &str,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(
        "SELECT job_type, month, threshold, spent_cents, limit_cents FROM budget_alerts \
         WHERE month = ?1",
    )
    .bind(&[JsValue::from_str(month)])
}

/// Marks every raised budget alert passed on (to the `alerts` table).
pub fn budget_alert_set_notified(
    db: &D1Database,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    db.prepare("UPDATE budget_alerts SET notified_at = ?1 WHERE notified_at IS NULL")
        .bind(&[num(now_ms)])
}
