//! A forwarded type's run under the monthly budget its definition declares (docs/app-guide.md
//! "Budgets for your own types"): the month's budget is opened before the delivery (one D1
//! round trip), a run once the month's spend has reached its limit is `skipped`
//! (`budget_hard_stop`) without delivering, and the `cost_cents` the app's answer reports is
//! added to the month with the alerts it reaches (one more round trip, only when it reports a
//! cost). Types without a budget never come here.

use std::future::Future;

use jobs_shared::budget::{cents, month_of, next_month_start_ms, percent_used, BudgetAction};
use jobs_shared::budget::{BudgetSpec, Usage};
use jobs_shared::job::job_type::JobType;
use jobs_shared::observe::log_line::{emit, fault, LogLevel};
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use jobs_shared::util::time_fmt::rfc3339;
use jobs_store::budgets::{self, Budget, BudgetKey, ItemCounts, Spend};
use serde_json::Value;
use worker::D1Database;

use crate::job_context::{HandlerRun, JobContext};

/// The most one run may report spending, in cents ($10,000): a remote answer is untrusted, and a
/// larger claim is cut to it.
pub const MAX_RUN_COST_CENTS: f64 = 1_000_000.0;

/// Runs `deliver` under `spec`, the budget of `ctx`'s type.
pub async fn run_within(
    ctx: &JobContext<'_>,
    spec: BudgetSpec,
    deliver: impl Future<Output = Result<Option<Value>, JobError>>,
) -> HandlerRun {
    let internal = |e: worker::Error| JobError::new(ErrorClass::Internal, e.to_string());
    let db = match ctx.env.d1("DB") {
        Ok(db) => db,
        Err(e) => return HandlerRun::of(Err(internal(e))),
    };
    let month = month_of(ctx.started_at);
    let key = BudgetKey {
        job_type: ctx.job_type,
        month: &month,
    };
    let budget = match budgets::budget_open_month(&db, key, spec, ctx.started_at).await {
        Ok(budget) => budget,
        Err(e) => return HandlerRun::of(Err(internal(e))),
    };
    if budget.action() == BudgetAction::HardStop {
        count_throttle(&db, key).await;
        return HandlerRun::of(Err(hard_stop(ctx.job_type, &budget, ctx.started_at)));
    }
    let outcome = deliver.await;
    let cost_cents = reported_cost(&outcome);
    if cost_cents > 0.0 {
        let spend = Spend {
            cost_cents,
            requests: 1,
            usage: Usage::default(),
        };
        let items = ItemCounts {
            tagged: 0,
            failed: 0,
        };
        let written = match budgets::budget_add_spend(&db, key, &spend, items, ctx.started_at) {
            Ok(statements) => db.batch(statements).await,
            Err(e) => Err(e),
        };
        match written.and_then(|results| budgets::after_spend(&results)) {
            Ok((_, alerts)) => alerts.iter().for_each(|alert| emit(&alert.log_line())),
            // The run happened: its record keeps the cost even when the month's total missed it.
            Err(e) => fault(
                LogLevel::Error,
                "budget",
                format_args!("the spend of {cost_cents} cents was not added to {month}: {e}"),
            ),
        }
    }
    HandlerRun {
        cost_cents,
        ..HandlerRun::of(outcome)
    }
}

/// Counts a run the budget held back on the month's row; a failure is logged, never the run's.
pub async fn count_throttle(db: &D1Database, key: BudgetKey<'_>) {
    if let Err(e) = budgets::budget_count_throttle(db, key).await {
        let why = format_args!("the throttle was not counted ({e})");
        fault(LogLevel::Warn, "budget", why);
    }
}

/// What the app's answer says the run spent: its JSON's `cost_cents`, a number from 0, cut to
/// [`MAX_RUN_COST_CENTS`]; 0 when it says nothing (or nothing usable).
fn reported_cost(outcome: &Result<Option<Value>, JobError>) -> f64 {
    let Ok(Some(result)) = outcome else {
        return 0.0;
    };
    let cost = result["body"]["cost_cents"].as_f64().unwrap_or(0.0);
    if cost.is_finite() && cost > 0.0 {
        cost.min(MAX_RUN_COST_CENTS)
    } else {
        0.0
    }
}

/// Why a run under a spent budget (HARD_STOP) is skipped: its class makes the job `skipped`,
/// and its message, the job's `error.message`, says until when.
pub fn hard_stop(job_type: JobType, budget: &Budget, now_ms: i64) -> JobError {
    JobError::new(
        ErrorClass::BudgetHardStop,
        format!(
            "the {} budget is at {} % ({} of {} cents): skipped until the month rolls over ({}) \
             or the limit is raised",
            job_type.as_str(),
            percent_used(budget.spent_cents, budget.limit_cents),
            cents(budget.spent_cents),
            budget.limit_cents,
            rfc3339(next_month_start_ms(now_ms)),
        ),
    )
}
