//! The `budgets` table: one row per budgeted job type and UTC month (its limit, spend, requests
//! and tokens). A month's row is created with the inherited limit the first time the month is
//! used (a run opens it, an operator sets its limit); a batch's spend is added, with the alerts
//! it raises (`budget_alerts`), inside the batch that stores the batch's results, so the budget
//! is re-read between batches at no extra round trip.

use jobs_shared::budget::{BudgetAction, BudgetSpec, RaisedAlert, Usage};
use jobs_shared::job::job_type::JobType;
use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, D1Result};

use crate::budget_alerts::budget_alert_insert_reached;
use crate::d1::num;

/// The limit a month starts with: the latest earlier month's, so an operator's change carries
/// over, else the type's default. Binds ?1 type, ?2 month, ?3 default limit.
const MONTH_LIMIT_SQL: &str = "COALESCE((SELECT limit_cents FROM budgets \
     WHERE job_type = ?1 AND month < ?2 ORDER BY month DESC LIMIT 1), ?3)";

/// A month's key, bound as ?1 and ?2.
fn budget_key(job_type: JobType, month: &str) -> [JsValue; 2] {
    [
        JsValue::from_str(job_type.as_str()),
        JsValue::from_str(month),
    ]
}

/// [`MONTH_LIMIT_SQL`]'s binds for a month of a type.
fn month_limit_binds(job_type: JobType, spec: BudgetSpec, month: &str) -> [JsValue; 3] {
    let [job_type, month] = budget_key(job_type, month);
    [job_type, month, num(spec.default_limit_cents)]
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
    job_type: JobType,
    spec: BudgetSpec,
    month: &str,
    now_ms: i64,
) -> worker::Result<Budget> {
    let [job_type, month_key] = budget_key(job_type, month);
    let create = db
        .prepare(format!(
            "INSERT INTO budgets (job_type, month, limit_cents, updated_at) \
             SELECT ?1, ?2, {MONTH_LIMIT_SQL}, ?4 WHERE true \
             ON CONFLICT (job_type, month) DO NOTHING"
        ))
        .bind(&[
            job_type.clone(),
            month_key.clone(),
            num(spec.default_limit_cents),
            num(now_ms),
        ])?;
    let read = db
        .prepare("SELECT spent_cents, limit_cents FROM budgets WHERE job_type = ?1 AND month = ?2")
        .bind(&[job_type, month_key])?;
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
    job_type: JobType,
    month: &str,
    spend: &Spend,
    items: ItemCounts,
    now_ms: i64,
) -> worker::Result<Vec<D1PreparedStatement>> {
    let [job_type_key, month_key] = budget_key(job_type, month);
    Ok(vec![
        db.prepare(
            "UPDATE budgets SET spent_cents = spent_cents + ?3, requests = requests + ?4, \
             tokens_input = tokens_input + ?5, tokens_output = tokens_output + ?6, updated_at = ?7, \
             items_tagged = items_tagged + ?8, items_failed = items_failed + ?9 \
             WHERE job_type = ?1 AND month = ?2 RETURNING spent_cents, limit_cents",
        )
        .bind(&[
            job_type_key,
            month_key,
            JsValue::from_f64(spend.cost_cents),
            JsValue::from_f64(spend.requests.into()),
            JsValue::from_f64(spend.usage.input_tokens as f64),
            JsValue::from_f64(spend.usage.output_tokens as f64),
            num(now_ms),
            JsValue::from_f64(items.tagged.into()),
            JsValue::from_f64(items.failed.into()),
        ])?,
        budget_alert_insert_reached(db, job_type, month, now_ms)?,
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
    job_type: JobType,
    month: &str,
    limit_cents: i64,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    let [job_type, month] = budget_key(job_type, month);
    db.prepare(
        "INSERT INTO budgets (job_type, month, limit_cents, updated_at) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (job_type, month) DO UPDATE SET limit_cents = excluded.limit_cents, \
         updated_at = excluded.updated_at",
    )
    .bind(&[job_type, month, num(limit_cents), num(now_ms)])
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

const MONTH_COLUMNS: &str =
    "month, limit_cents, spent_cents, requests, tokens_input, tokens_output";

/// The month's row, absent until the month's first run or change (rows: [`BudgetMonth`]).
pub fn budget_get(
    db: &D1Database,
    job_type: JobType,
    month: &str,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT {MONTH_COLUMNS} FROM budgets WHERE job_type = ?1 AND month = ?2"
    ))
    .bind(&budget_key(job_type, month))
}

/// The limit the month starts (or would start) with (rows: [`InheritedLimit`]).
pub fn budget_get_inherited_limit(
    db: &D1Database,
    job_type: JobType,
    spec: BudgetSpec,
    month: &str,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!("SELECT {MONTH_LIMIT_SQL} AS limit_cents"))
        .bind(&month_limit_binds(job_type, spec, month))
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
    db.prepare(format!(
        "SELECT {MONTH_COLUMNS} FROM budgets WHERE job_type = ?1 AND month >= ?2 \
         ORDER BY month DESC"
    ))
    .bind(&budget_key(job_type, from))
}

/// Each job type's spend over every month (rows: `label`, `value`), for GET /metrics.
pub fn budget_spent_by_type(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    db.prepare(
        "SELECT job_type AS label, SUM(spent_cents) AS value FROM budgets GROUP BY job_type \
         ORDER BY job_type",
    )
    .bind(&[])
}

/// Counts a run the budget held back (queue or hard stop) on the month's row, opened by
/// [`budget_open_month`].
pub async fn budget_count_throttle(
    db: &D1Database,
    job_type: JobType,
    month: &str,
) -> worker::Result<()> {
    db.prepare("UPDATE budgets SET throttles = throttles + 1 WHERE job_type = ?1 AND month = ?2")
        .bind(&budget_key(job_type, month))?
        .run()
        .await?;
    Ok(())
}

/// A type's items, tokens, cost and throttles over every month, and this month's spend and
/// limit (the one it would start with when it has no row yet, as the budget API shows), for
/// GET /metrics (one row: `jobs_shared::observe::prometheus::TaggingTotals`).
pub fn budget_metrics(
    db: &D1Database,
    job_type: JobType,
    spec: BudgetSpec,
    month: &str,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT COALESCE(SUM(items_tagged), 0) AS items_tagged, \
         COALESCE(SUM(items_failed), 0) AS items_failed, \
         COALESCE(SUM(tokens_input), 0) AS tokens_input, \
         COALESCE(SUM(tokens_output), 0) AS tokens_output, \
         COALESCE(SUM(spent_cents), 0) AS cost_cents, COALESCE(SUM(throttles), 0) AS throttles, \
         COALESCE(SUM(CASE WHEN month = ?2 THEN spent_cents END), 0) AS month_spent_cents, \
         COALESCE(MAX(CASE WHEN month = ?2 THEN limit_cents END), {MONTH_LIMIT_SQL}) \
           AS month_limit_cents \
         FROM budgets WHERE job_type = ?1"
    ))
    .bind(&month_limit_binds(job_type, spec, month))
}
