//! The `alerts` table: one row per alert rule and key, opened once while the rule fires and
//! resolved when it clears; `notified` remembers what the channel was last told (the sweep's
//! `alert_evaluator`).

use jobs_shared::observe::alert_rules::StoredAlert;
use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::num;

/// An alert row with what the channel was last told about it.
#[derive(Deserialize)]
pub struct AlertRow {
    #[serde(flatten)]
    pub alert: StoredAlert,
    pub severity: String,
    pub summary: String,
    pub notified: Option<String>,
}

/// An alert's `status` values.
const OPEN: &str = "open";
const RESOLVED: &str = "resolved";

const ALERT_COLUMNS: &str = "rule, key, status, severity, summary, notified";

/// Every alert (rows: [`AlertRow`]).
pub fn alert_list(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!("SELECT {ALERT_COLUMNS} FROM alerts"))
        .bind(&[])
}

/// The alerts whose channel has not been told their status (rows: [`AlertRow`]).
pub fn alert_list_unnotified(db: &D1Database) -> D1PreparedStatement {
    db.prepare(format!(
        "SELECT {ALERT_COLUMNS} FROM alerts WHERE notified IS NOT status"
    ))
}

/// A firing rule's alert, opened unless it is open already (a compare-and-set on its status).
pub fn alert_open(
    db: &D1Database,
    (rule, key): (&str, &str),
    severity: &str,
    summary: &str,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "INSERT INTO alerts (rule, key, status, severity, summary, opened_at, updated_at) \
         VALUES (?1, ?2, '{OPEN}', ?3, ?4, ?5, ?5) ON CONFLICT (rule, key) DO UPDATE SET \
         status = '{OPEN}', severity = excluded.severity, summary = excluded.summary, \
         opened_at = excluded.opened_at, resolved_at = NULL, notified = NULL, \
         updated_at = excluded.updated_at WHERE alerts.status = '{RESOLVED}'"
    ))
    .bind(&[
        rule.into(),
        key.into(),
        severity.into(),
        summary.into(),
        num(now_ms),
    ])
}

/// A cleared rule's alert, resolved if it is still open.
pub fn alert_resolve(
    db: &D1Database,
    (rule, key): (&str, &str),
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "UPDATE alerts SET status = '{RESOLVED}', resolved_at = ?3, updated_at = ?3 \
         WHERE rule = ?1 AND key = ?2 AND status = '{OPEN}'"
    ))
    .bind(&[rule.into(), key.into(), num(now_ms)])
}

/// Records that the channel was told the alert is `status`, if it still is.
pub fn alert_set_notified(
    db: &D1Database,
    (rule, key): (&str, &str),
    status: &str,
) -> worker::Result<D1PreparedStatement> {
    db.prepare("UPDATE alerts SET notified = ?3 WHERE rule = ?1 AND key = ?2 AND status = ?3")
        .bind(&[rule.into(), key.into(), JsValue::from_str(status)])
}

/// The open alerts per rule (rows: `label`, `value`), for GET /metrics.
pub fn alert_count_open_by_rule(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT rule AS label, COUNT(*) AS value FROM alerts WHERE status = '{OPEN}' GROUP BY rule"
    ))
    .bind(&[])
}
