//! The `budget_alerts` table: a budgeted type's month reaching 75, 90 and 100 % of its limit,
//! raised once each (its key is type, month, threshold) by the write that reaches it (a batch's
//! spend, an operator's lower limit), and passed on by the sweep to `alerts` (`notified_at`).
//! Only spend reaches a threshold (a limit of 0 with nothing spent stops work, alerting
//! nothing), and a raised limit re-arms the thresholds the spend is now under.
//!
//! A month's spend in `budgets b` has reached a threshold (a percentage) when
//! `b.spent_cents > 0 AND b.spent_cents * 100 >= b.limit_cents * <threshold>`.

use jobs_shared::budget::RaisedAlert;
use jobs_shared::job::job_type::JobType;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

/// Raises every threshold the month's spend has reached and that was not raised before
/// (rows: the new alerts, shared [`RaisedAlert`]). Write it after the statement that changes the
/// month's spend or limit, in the same batch. The thresholds are shared `ALERT_THRESHOLDS`
/// (a test holds the literal to them).
pub fn budget_alert_insert_reached(
    db: &D1Database,
    job_type: JobType,
    month: &str,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    sql!(db, RaisedAlert =>
        "INSERT OR IGNORE INTO budget_alerts \
         (job_type, month, threshold, spent_cents, limit_cents, created_at) \
         SELECT b.job_type, b.month, t.column1, b.spent_cents, b.limit_cents, ?3 \
         FROM budgets b, (VALUES (75), (90), (100)) t \
         WHERE b.job_type = ?1 AND b.month = ?2 \
         AND b.spent_cents > 0 AND b.spent_cents * 100 >= b.limit_cents * t.column1 \
         RETURNING job_type, month, threshold, spent_cents, limit_cents",
        job_type.as_str(),
        month,
        now_ms
    )
}

/// Re-arms the month's thresholds its spend is now under (after an operator's limit change, in
/// the same batch): their alerts go (the sweep resolves them in `alerts`), so spend that reaches
/// them again alerts again.
pub fn budget_alert_delete_unreached(
    db: &D1Database,
    job_type: JobType,
    month: &str,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "DELETE FROM budget_alerts WHERE job_type = ?1 AND month = ?2 AND NOT EXISTS \
         (SELECT 1 FROM budgets b WHERE b.job_type = ?1 AND b.month = ?2 \
         AND b.spent_cents > 0 AND b.spent_cents * 100 >= b.limit_cents * budget_alerts.threshold)",
        job_type.as_str(),
        month
    )
}

/// An alert as the budget API shows it.
#[derive(Deserialize)]
pub struct BudgetAlert {
    pub month: String,
    pub threshold: u32,
    pub spent_cents: f64,
    pub limit_cents: i64,
    pub created_at: i64,
    pub notified_at: Option<i64>,
}

/// A type's alerts of the month, lowest threshold first (rows: [`BudgetAlert`]).
pub fn budget_alert_list_by_type(
    db: &D1Database,
    job_type: JobType,
    month: &str,
) -> worker::Result<D1PreparedStatement> {
    sql!(db, BudgetAlert =>
        "SELECT month, threshold, spent_cents, limit_cents, created_at, notified_at \
         FROM budget_alerts WHERE job_type = ?1 AND month = ?2 ORDER BY threshold",
        job_type.as_str(),
        month
    )
}

/// A type's alerts of the months from `from` on, lowest threshold first (rows: [`BudgetAlert`]).
pub fn budget_alert_list_by_type_since(
    db: &D1Database,
    job_type: JobType,
    from: &str,
) -> worker::Result<D1PreparedStatement> {
    sql!(db, BudgetAlert =>
        "SELECT month, threshold, spent_cents, limit_cents, created_at, notified_at \
         FROM budget_alerts WHERE job_type = ?1 AND month >= ?2 ORDER BY threshold",
        job_type.as_str(),
        from
    )
}

/// The budget alerts raised in `month` (rows: shared [`RaisedAlert`]).
pub fn budget_alert_list_month(
    db: &D1Database,
    month: &str,
) -> worker::Result<D1PreparedStatement> {
    sql!(db, RaisedAlert =>
        "SELECT job_type, month, threshold, spent_cents, limit_cents FROM budget_alerts \
         WHERE month = ?1",
        month
    )
}

/// Marks every raised budget alert passed on (to the `alerts` table).
pub fn budget_alert_set_notified(
    db: &D1Database,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "UPDATE budget_alerts SET notified_at = ?1 WHERE notified_at IS NULL",
        now_ms
    )
}

#[cfg(test)]
mod tests {
    use jobs_shared::budget::ALERT_THRESHOLDS;

    #[test]
    fn insert_lists_every_threshold() {
        let thresholds = ALERT_THRESHOLDS.map(|t| format!("({t})")).join(", ");
        let source = include_str!("budget_alerts.rs");
        assert!(
            source.contains(&format!("(VALUES {thresholds}) t")),
            "{thresholds}"
        );
    }
}
