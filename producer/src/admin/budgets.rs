//! /v1/admin/budgets: the monthly budgets of job types that declare one (ai_tagging, and a team's
//! type whose definition has a `budget`). The status
//! of the current UTC month (limit, spend, share used, the action it implies, the alerts raised),
//! the history of past months, and a change of the limit, written with its audit row. A lower
//! limit can cross a threshold at once: its alert is raised in the same batch.

use jobs_shared::budget::{
    alert_level, cents, history_months, month_back, month_of, next_month_start_ms, percent_used,
    validate_limit_change, BudgetAction, BudgetSpec, RaisedAlert,
};
use jobs_shared::job::job_type::JobType;
use jobs_shared::observe::log_line::emit;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::util::time_fmt::rfc3339;
use jobs_store::audit::audit_insert_after_write;
use jobs_store::budget_alerts::{
    budget_alert_delete_unreached, budget_alert_insert_reached, budget_alert_list_by_type,
    budget_alert_list_by_type_since, BudgetAlert,
};
use jobs_store::budgets::{
    budget_get, budget_get_inherited_limit, budget_list_since, budget_set_limit, BudgetKey,
    BudgetMonth, InheritedLimit,
};
use serde_json::{json, Value};
use worker::{D1Database, D1PreparedStatement, D1Result, Env, Response};

use crate::admin::d1;
use crate::admin::Admin;
use crate::request::Request;
use crate::{body, env_config, respond};

/// A job type that declares a budget, with that budget.
#[derive(Clone, Copy)]
struct Budgeted {
    job_type: JobType,
    spec: BudgetSpec,
}

impl Budgeted {
    fn of(job_type: JobType) -> Option<Budgeted> {
        let spec = job_type.budget()?;
        Some(Budgeted { job_type, spec })
    }
}

/// The path's job type, with its budget; a 404 when it declares none.
fn budgeted(name: &str) -> Result<Budgeted, ApiError> {
    JobType::parse(name).and_then(Budgeted::of).ok_or_else(|| {
        ApiError::new(404, "not_found", format!("{name:?} has no budget")).with_field("type")
    })
}

/// GET /v1/admin/budgets: every budgeted type, this month.
pub async fn list(req: &Request, env: &Env) -> Result<Response, ApiError> {
    d1::only_params(req, &[], false)?;
    let types: Vec<Budgeted> = JobType::known()
        .into_iter()
        .filter_map(Budgeted::of)
        .collect();
    let db = d1::database(env)?;
    let now = env_config::now_ms();
    let mut statements = Vec::new();
    for budget in &types {
        statements.extend(status_statements(&db, *budget, now)?);
    }
    let results = d1::batch(&db, statements).await?;
    let budgets = types
        .iter()
        .zip(results.chunks(STATUS_STATEMENTS))
        .map(|(budget, results)| status_view(*budget, now, results))
        .collect::<Result<Vec<_>, _>>()?;
    respond::json(200, &json!({ "budgets": budgets }))
}

/// GET /v1/admin/budgets/{type}
pub async fn status(req: &Request, env: &Env, name: &str) -> Result<Response, ApiError> {
    d1::only_params(req, &[], false)?;
    let budget = budgeted(name)?;
    let db = d1::database(env)?;
    let now = env_config::now_ms();
    let results = d1::batch(&db, status_statements(&db, budget, now)?).await?;
    respond::json(200, &status_view(budget, now, &results)?)
}

/// PATCH /v1/admin/budgets/{type} `{"limit_cents": n}`: this month's limit (later months start
/// from it).
pub async fn set_limit(
    admin: &Admin<'_>,
    req: &mut Request,
    name: &str,
) -> Result<Response, ApiError> {
    let env = admin.env;
    let budget = budgeted(name)?;
    let limit = validate_limit_change(&body::json(req).await?)?;
    let job_type = budget.job_type;
    let now = env_config::now_ms();
    let month = month_of(now);
    let key = BudgetKey {
        job_type,
        month: &month,
    };
    let db = d1::database(env)?;
    let entry = admin.entry_at(
        "budget.limit",
        json!({ "job_type": job_type.as_str(), "month": month, "limit_cents": limit }),
        now,
    );
    let mut statements = vec![
        budget_set_limit(&db, key, limit, now)?,
        audit_insert_after_write(&db, &entry, false)?,
        budget_alert_insert_reached(&db, job_type, &month, now)?,
        budget_alert_delete_unreached(&db, job_type, &month)?,
    ];
    statements.extend(status_statements(&db, budget, now)?);
    let results = d1::batch(&db, statements).await?;
    for alert in d1::rows::<RaisedAlert>(&results[2])? {
        emit(&alert.log_line());
    }
    respond::json(200, &status_view(budget, now, &results[4..])?)
}

const STATUS_STATEMENTS: usize = 3;

/// This month's row (absent until the month's first run or change), the limit it would start
/// with, and its alerts.
fn status_statements(
    db: &D1Database,
    budget: Budgeted,
    now_ms: i64,
) -> Result<Vec<D1PreparedStatement>, ApiError> {
    let month = month_of(now_ms);
    let key = BudgetKey {
        job_type: budget.job_type,
        month: &month,
    };
    [
        budget_get(db, key),
        budget_get_inherited_limit(db, key, budget.spec),
        budget_alert_list_by_type(db, budget.job_type, &month),
    ]
    .into_iter()
    .collect::<worker::Result<_>>()
    .map_err(ApiError::from)
}

fn status_view(
    Budgeted { job_type, .. }: Budgeted,
    now_ms: i64,
    results: &[D1Result],
) -> Result<Value, ApiError> {
    let month = month_of(now_ms);
    let row = match d1::rows::<BudgetMonth>(&results[0])?.pop() {
        Some(row) => row,
        None => BudgetMonth {
            month,
            limit_cents: d1::rows::<InheritedLimit>(&results[1])?
                .pop()
                .map_or(0, |l| l.limit_cents),
            spent_cents: 0.0,
            requests: 0,
            tokens_input: 0,
            tokens_output: 0,
        },
    };
    let alerts: Vec<BudgetAlert> = d1::rows(&results[2])?;
    let action = BudgetAction::of(row.spent_cents, row.limit_cents);
    let mut view = month_view(&row);
    view["job_type"] = json!(job_type.as_str());
    view["batch_size"] = json!(action.batch_size());
    view["resets_at"] = json!(rfc3339(next_month_start_ms(now_ms)));
    view["alerts"] = alerts.iter().map(alert_view).collect();
    Ok(view)
}

/// GET /v1/admin/budgets/{type}/history?months=N: the last N months (this one included) that
/// have a budget row, newest first.
pub async fn history(req: &Request, env: &Env, name: &str) -> Result<Response, ApiError> {
    let job_type = budgeted(name)?.job_type;
    let pairs = d1::only_params(req, &["months"], false)?;
    let months = history_months(d1::param(&pairs, "months"))?;
    let now = env_config::now_ms();
    let from = month_back(now, months - 1);
    let db = d1::database(env)?;
    let statements = vec![
        budget_list_since(&db, job_type, &from)?,
        budget_alert_list_by_type_since(&db, job_type, &from)?,
    ];
    let results = d1::batch(&db, statements).await?;
    let rows: Vec<BudgetMonth> = d1::rows(&results[0])?;
    let alerts: Vec<BudgetAlert> = d1::rows(&results[1])?;
    let months_view: Vec<Value> = rows
        .iter()
        .map(|row| {
            let mut view = month_view(row);
            view["alerts"] = alerts
                .iter()
                .filter(|a| a.month == row.month)
                .map(|a| json!(a.threshold))
                .collect();
            view
        })
        .collect();
    respond::json(
        200,
        &json!({ "job_type": job_type.as_str(), "from": from, "months": months_view }),
    )
}

/// What a status and a history month share.
fn month_view(row: &BudgetMonth) -> Value {
    json!({
        "month": row.month,
        "limit_cents": row.limit_cents,
        "spent_cents": cents(row.spent_cents),
        "percent_used": percent_used(row.spent_cents, row.limit_cents),
        "action": BudgetAction::of(row.spent_cents, row.limit_cents).as_str(),
        "requests": row.requests,
        "tokens": { "input": row.tokens_input, "output": row.tokens_output },
    })
}

fn alert_view(alert: &BudgetAlert) -> Value {
    json!({
        "threshold": alert.threshold,
        "level": alert_level(alert.threshold),
        "spent_cents": cents(alert.spent_cents),
        "limit_cents": alert.limit_cents,
        "at": rfc3339(alert.created_at),
        "notified_at": alert.notified_at.map(rfc3339),
    })
}
