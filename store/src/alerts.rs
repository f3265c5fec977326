//! The `alerts` table: one row per alert rule and key, opened once while the rule fires and
//! resolved when it clears; `notified` remembers what the channel was last told (the sweep's
//! `alert_evaluator`). An alert's `status` is `open` or `resolved`.

use jobs_shared::observe::alert_rules::StoredAlert;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

/// An alert row with what the channel was last told about it.
#[derive(Deserialize)]
pub struct AlertRow {
    pub rule: String,
    pub key: String,
    pub status: String,
    pub severity: String,
    pub summary: String,
    pub notified: Option<String>,
}

impl AlertRow {
    pub fn stored(&self) -> StoredAlert {
        StoredAlert {
            rule: self.rule.clone(),
            key: self.key.clone(),
            status: self.status.clone(),
        }
    }
}

/// Which alert: its rule and its key (a family, a type...).
#[derive(Clone, Copy)]
pub struct AlertKey<'a> {
    pub rule: &'a str,
    pub key: &'a str,
}

/// Every alert (rows: [`AlertRow`]).
pub fn alert_list(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    sql!(db, AlertRow => "SELECT rule, key, status, severity, summary, notified FROM alerts")
}

/// The alerts whose channel has not been told their status (rows: [`AlertRow`]).
pub fn alert_list_unnotified(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    sql!(db, AlertRow =>
        "SELECT rule, key, status, severity, summary, notified FROM alerts \
         WHERE notified IS NOT status")
}

/// A firing rule's alert, opened unless it is open already (a compare-and-set on its status).
pub fn alert_open(
    db: &D1Database,
    alert: AlertKey<'_>,
    severity: &str,
    summary: &str,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "INSERT INTO alerts (rule, key, status, severity, summary, opened_at, updated_at) \
         VALUES (?1, ?2, 'open', ?3, ?4, ?5, ?5) ON CONFLICT (rule, key) DO UPDATE SET \
         status = 'open', severity = excluded.severity, summary = excluded.summary, \
         opened_at = excluded.opened_at, resolved_at = NULL, notified = NULL, \
         updated_at = excluded.updated_at WHERE alerts.status = 'resolved'",
        alert.rule,
        alert.key,
        severity,
        summary,
        now_ms
    )
}

/// A cleared rule's alert, resolved if it is still open.
pub fn alert_resolve(
    db: &D1Database,
    alert: AlertKey<'_>,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "UPDATE alerts SET status = 'resolved', resolved_at = ?3, updated_at = ?3 \
         WHERE rule = ?1 AND key = ?2 AND status = 'open'",
        alert.rule,
        alert.key,
        now_ms
    )
}

/// Records that the channel was told the alert is `status`, if it still is.
pub fn alert_set_notified(
    db: &D1Database,
    alert: AlertKey<'_>,
    status: &str,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "UPDATE alerts SET notified = ?3 WHERE rule = ?1 AND key = ?2 AND status = ?3",
        alert.rule,
        alert.key,
        status
    )
}

/// The open alerts per rule (rows: `label`, `value`), for GET /metrics.
pub fn alert_count_open_by_rule(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "SELECT rule AS label, COUNT(*) AS value FROM alerts WHERE status = 'open' GROUP BY rule"
    )
}
