//! The `budgets` table: one row per budgeted job type and UTC month (its limit, spend, requests
//! and tokens). A month's row is created with the inherited limit the first time the month is
//! used (a run opens it, an operator sets its limit); a batch's spend is added, with the alerts
//! it raises (`budget_alerts`), inside the batch that stores the batch's results, so the budget
//! is re-read between batches at no extra round trip.
//!
//! The limit a month starts with is the latest earlier month's, so an operator's change carries
//! over, else the type's default: `COALESCE((SELECT limit_cents FROM budgets WHERE job_type = ?1
//! AND month < ?2 ORDER BY month DESC LIMIT 1), ?3)` in the statements that need it, binding
//! ?1 the type, ?2 the month, ?3 the default limit.

use jobs_shared::budget::{BudgetAction, BudgetSpec, RaisedAlert, Usage};
use jobs_shared::job::job_type::JobType;
use jobs_shared::observe::prometheus::{LabelledValue, TaggingTotals};
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement, D1Result};

use crate::budget_alerts::budget_alert_insert_reached;

/// Which budget: a budgeted job type's UTC month (`YYYY-MM`).
#[derive(Clone, Copy)]
pub struct BudgetKey<'a> {
    pub job_type: JobType,
    pub month: &'a str,
}

/// A month's budget as D1 holds it now (other jobs' spend and an operator's change included).
#[derive(Deserialize)]
pub struct Budget {
    pub spent_cents: f64,
    pub limit_cents: i64,
}

impl Budget {
    pub fn action(&self) -> BudgetAction {
        BudgetAction::of(self.spent_cents, self.limit_cents)
    }
}

/// The month's budget, its row created first if the month is new (one round trip).
pub async fn budget_open_month(
    db: &D1Database,
    key: BudgetKey<'_>,
    spec: BudgetSpec,
    now_ms: i64,
) -> worker::Result<Budget> {
    let (job_type, month) = (key.job_type.as_str(), key.month);
    let create = sql!(
        db,
        "INSERT INTO budgets (job_type, month, limit_cents, updated_at) \
         SELECT ?1, ?2, COALESCE((SELECT limit_cents FROM budgets \
         WHERE job_type = ?1 AND month < ?2 ORDER BY month DESC LIMIT 1), ?3), ?4 WHERE true \
         ON CONFLICT (job_type, month) DO NOTHING",
        job_type,
        month,
        spec.default_limit_cents,
        now_ms
    )?;
    let read = sql!(db, Budget =>
        "SELECT spent_cents, limit_cents FROM budgets WHERE job_type = ?1 AND month = ?2",
        job_type,
        month
    )?;
    let results = db.batch(vec![create, read]).await?;
    results[1]
        .results::<Budget>()?
        .pop()
        .ok_or_else(|| worker::Error::RustError(format!("no budget row for {month}")))
}

/// What one batch spent.
pub struct Spend {
    pub cost_cents: f64,
    pub requests: u32,
    pub usage: Usage,
}

/// What one batch did with its items (docs/operating.md "GET /metrics": `ai_tagging_items_total`).
pub struct ItemCounts {
    pub tagged: u32,
    pub failed: u32,
}

/// The two statements that add `spend` and `items` to the month and raise the alerts it
/// reaches; append them last to a batch and read its results with [`after_spend`].
pub fn budget_add_spend(
    db: &D1Database,
    key: BudgetKey<'_>,
    spend: &Spend,
    items: ItemCounts,
    now_ms: i64,
) -> worker::Result<Vec<D1PreparedStatement>> {
    let (input_tokens, output_tokens) = (
        spend.usage.input_tokens as f64,
        spend.usage.output_tokens as f64,
    );
    Ok(vec![
        sql!(db, Budget =>
            "UPDATE budgets SET spent_cents = spent_cents + ?3, requests = requests + ?4, \
             tokens_input = tokens_input + ?5, tokens_output = tokens_output + ?6, updated_at = ?7, \
             items_tagged = items_tagged + ?8, items_failed = items_failed + ?9 \
             WHERE job_type = ?1 AND month = ?2 RETURNING spent_cents, limit_cents",
            key.job_type.as_str(),
            key.month,
            spend.cost_cents,
            spend.requests,
            input_tokens,
            output_tokens,
            now_ms,
            items.tagged,
            items.failed
        )?,
        budget_alert_insert_reached(db, key.job_type, key.month, now_ms)?,
    ])
}

/// The budget after the spend, and the alerts it raised, from a batch ending in
/// [`budget_add_spend`].
pub fn after_spend(results: &[D1Result]) -> worker::Result<(Budget, Vec<RaisedAlert>)> {
    let [.., spent, alerts] = results else {
        return Err(worker::Error::RustError("spend results missing".into()));
    };
    let budget = spent
        .results::<Budget>()?
        .pop()
        .ok_or_else(|| worker::Error::RustError("the month's budget row is gone".into()))?;
    Ok((budget, alerts.results()?))
}

/// An operator's limit for the month (later months start from it), its row created if new.
pub fn budget_set_limit(
    db: &D1Database,
    key: BudgetKey<'_>,
    limit_cents: i64,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "INSERT INTO budgets (job_type, month, limit_cents, updated_at) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (job_type, month) DO UPDATE SET limit_cents = excluded.limit_cents, \
         updated_at = excluded.updated_at",
        key.job_type.as_str(),
        key.month,
        limit_cents,
        now_ms
    )
}

/// A month's row, as the budget API shows it.
#[derive(Deserialize)]
pub struct BudgetMonth {
    pub month: String,
    pub limit_cents: i64,
    pub spent_cents: f64,
    pub requests: i64,
    pub tokens_input: i64,
    pub tokens_output: i64,
}

/// The month's row, absent until the month's first run or change (rows: [`BudgetMonth`]).
pub fn budget_get(db: &D1Database, key: BudgetKey<'_>) -> worker::Result<D1PreparedStatement> {
    sql!(db, BudgetMonth =>
        "SELECT month, limit_cents, spent_cents, requests, tokens_input, tokens_output \
         FROM budgets WHERE job_type = ?1 AND month = ?2",
        key.job_type.as_str(),
        key.month
    )
}

/// The limit the month starts (or would start) with (rows: [`InheritedLimit`]).
pub fn budget_get_inherited_limit(
    db: &D1Database,
    key: BudgetKey<'_>,
    spec: BudgetSpec,
) -> worker::Result<D1PreparedStatement> {
    sql!(db, InheritedLimit =>
        "SELECT COALESCE((SELECT limit_cents FROM budgets \
         WHERE job_type = ?1 AND month < ?2 ORDER BY month DESC LIMIT 1), ?3) \
         AS \"limit_cents!: i64\"",
        key.job_type.as_str(),
        key.month,
        spec.default_limit_cents
    )
}

/// What [`budget_get_inherited_limit`] reads.
#[derive(Deserialize)]
pub struct InheritedLimit {
    pub limit_cents: i64,
}

/// The months from `from` on that have a row, newest first (rows: [`BudgetMonth`]).
pub fn budget_list_since(
    db: &D1Database,
    job_type: JobType,
    from: &str,
) -> worker::Result<D1PreparedStatement> {
    sql!(db, BudgetMonth =>
        "SELECT month, limit_cents, spent_cents, requests, tokens_input, tokens_output \
         FROM budgets WHERE job_type = ?1 AND month >= ?2 ORDER BY month DESC",
        job_type.as_str(),
        from
    )
}

/// Each job type's spend over every month (rows: shared [`LabelledValue`]), for GET /metrics.
pub fn budget_spent_by_type(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    sql!(db, LabelledValue =>
        "SELECT job_type AS label, SUM(spent_cents) AS \"value!: f64\" FROM budgets \
         GROUP BY job_type ORDER BY job_type")
}

/// Counts a run the budget held back (queue or hard stop) on the month's row, opened by
/// [`budget_open_month`].
pub async fn budget_count_throttle(db: &D1Database, key: BudgetKey<'_>) -> worker::Result<()> {
    sql!(
        db,
        "UPDATE budgets SET throttles = throttles + 1 WHERE job_type = ?1 AND month = ?2",
        key.job_type.as_str(),
        key.month
    )?
    .run()
    .await?;
    Ok(())
}

/// A type's items, tokens, cost and throttles over every month, and this month's spend and
/// limit (the one it would start with when it has no row yet, as the budget API shows), for
/// GET /metrics (one row: shared [`TaggingTotals`], its counts read as f64).
pub fn budget_metrics(
    db: &D1Database,
    key: BudgetKey<'_>,
    spec: BudgetSpec,
) -> worker::Result<D1PreparedStatement> {
    sql!(db, TaggingTotals =>
        "SELECT COALESCE(SUM(items_tagged), 0) AS \"items_tagged!: f64\", \
         COALESCE(SUM(items_failed), 0) AS \"items_failed!: f64\", \
         COALESCE(SUM(tokens_input), 0) AS \"tokens_input!: f64\", \
         COALESCE(SUM(tokens_output), 0) AS \"tokens_output!: f64\", \
         COALESCE(SUM(spent_cents), 0) AS \"cost_cents!: f64\", \
         COALESCE(SUM(throttles), 0) AS \"throttles!: f64\", \
         COALESCE(SUM(CASE WHEN month = ?2 THEN spent_cents END), 0) \
           AS \"month_spent_cents!: f64\", \
         COALESCE(MAX(CASE WHEN month = ?2 THEN limit_cents END), \
           COALESCE((SELECT limit_cents FROM budgets \
           WHERE job_type = ?1 AND month < ?2 ORDER BY month DESC LIMIT 1), ?3)) \
           AS \"month_limit_cents!: i64\" \
         FROM budgets WHERE job_type = ?1",
        key.job_type.as_str(),
        key.month,
        spec.default_limit_cents
    )
}
