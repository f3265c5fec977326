//! SQL of a job type's monthly budget, for any budgeted type's handler: open the month (its row
//! is created with the inherited limit the first time) and read it in one round trip; record a
//! batch's spend, with the alerts it raises, inside the batch that stores the batch's results,
//! so the budget is re-read between batches at no extra round trip.

use jobs_shared::{
    alert_insert_sql, BudgetAction, BudgetSpec, JobType, RaisedAlert, Usage, MONTH_LIMIT_SQL,
};
use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, D1Result};

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

const READ: &str =
    "SELECT spent_cents, limit_cents FROM budgets WHERE job_type = ?1 AND month = ?2";

/// The month's budget, its row created first if the month is new.
pub async fn open(
    db: &D1Database,
    job_type: JobType,
    spec: BudgetSpec,
    month: &str,
    now_ms: i64,
) -> worker::Result<Budget> {
    let key = [
        JsValue::from_str(job_type.as_str()),
        JsValue::from_str(month),
    ];
    let create = db
        .prepare(format!(
            "INSERT INTO budgets (job_type, month, limit_cents, updated_at) \
             SELECT ?1, ?2, {MONTH_LIMIT_SQL}, ?4 WHERE true \
             ON CONFLICT (job_type, month) DO NOTHING"
        ))
        .bind(&[
            key[0].clone(),
            key[1].clone(),
            num(spec.default_limit_cents as f64),
            num(now_ms as f64),
        ])?;
    let read = db.prepare(READ).bind(&key)?;
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

/// The two statements that add `spend` to the month and raise the alerts it reaches; append
/// them last to a batch and read its results with [`after_spend`].
pub fn spend_statements(
    db: &D1Database,
    job_type: JobType,
    month: &str,
    spend: &Spend,
    now_ms: i64,
) -> worker::Result<Vec<D1PreparedStatement>> {
    let key = [
        JsValue::from_str(job_type.as_str()),
        JsValue::from_str(month),
    ];
    let now = num(now_ms as f64);
    Ok(vec![
        db.prepare(
            "UPDATE budgets SET spent_cents = spent_cents + ?3, requests = requests + ?4, \
             tokens_input = tokens_input + ?5, tokens_output = tokens_output + ?6, updated_at = ?7 \
             WHERE job_type = ?1 AND month = ?2 RETURNING spent_cents, limit_cents",
        )
        .bind(&[
            key[0].clone(),
            key[1].clone(),
            num(spend.cost_cents),
            num(spend.requests.into()),
            num(spend.usage.input_tokens as f64),
            num(spend.usage.output_tokens as f64),
            now.clone(),
        ])?,
        db.prepare(alert_insert_sql())
            .bind(&[key[0].clone(), key[1].clone(), now])?,
    ])
}

/// The budget after the spend, and the alerts it raised, from a batch ending in
/// [`spend_statements`].
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

fn num(n: f64) -> JsValue {
    JsValue::from_f64(n)
}
