//! `ai_tagging`: tags untagged feed items with an LLM, in batches sized by
//! the type's monthly budget. NORMAL: batches of 20; REDUCE: 10; QUEUE: nothing, and the job
//! succeeds saying it deferred; HARD_STOP: nothing, and the job is `skipped` (class
//! `budget_hard_stop`). The budget is re-read with every batch's write, so
//! a batch that pushes spend over a threshold changes the next batch or stops the job.
//!
//! An item the model answers badly (or not at all) is skipped and counted, and stays untagged
//! for the next run; only a 429 (retried after its Retry-After) or a refused key fails the job,
//! after what was tagged so far is stored. The month is the one the run started in (the time
//! the batch runner passes in). D1: one round trip for the budget, one to take the items, one
//! per batch (two when D1 refuses the tags: the spend is then written alone).

mod batch;
mod llm;
mod spent;

use futures::stream::{self, StreamExt};
use jobs_shared::budget::{
    cents, month_of, percent_used, BudgetAction, RaisedAlert,
};
use jobs_shared::job::job_type::JobType;
use jobs_shared::job::payloads::AiTaggingPayload;
use jobs_shared::observe::log_line::emit;
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use jobs_shared::runtime::clock;
use serde_json::{json, Value};
use worker::D1Database;

use crate::budget_gate;
use crate::job_context::{self, HandlerRun, JobContext};
use crate::job_events::SpanLog;
use batch::Batch;
use jobs_store::budgets::{self, Budget, BudgetKey, ItemCounts};
use jobs_store::feed_items::{self, Item};
use llm::{Call, Llm, CALL_TIMEOUT_MS};
use spent::Spent;

const TYPE: JobType = JobType::AI_TAGGING;
/// LLM calls in flight at once (a Worker may hold 6 connections open).
const CONCURRENT_CALLS: usize = 5;
/// Batches one job runs at most (an hour's capacity: 12 batches); it takes as many
/// items as that many batches of its starting size hold.
const MAX_BATCHES: usize = 12;
/// The longest a full batch can take; none starts unless it can end within the type's timeout.
const WORST_BATCH_MS: i64 = (20 / CONCURRENT_CALLS as i64) * CALL_TIMEOUT_MS as i64;

/// Runs the job; the run's start picks the budget month.
pub async fn run(ctx: &JobContext<'_>) -> HandlerRun {
    let mut spent = Spent::default();
    let outcome = tag(ctx, &mut spent).await;
    spent.into_run(ctx, outcome).await
}

async fn tag(ctx: &JobContext<'_>, spent: &mut Spent) -> Result<Option<Value>, JobError> {
    let (job, env, outbound, now_ms) = (ctx.job, ctx.env, ctx.outbound, ctx.started_at);
    let events = &SpanLog::of(ctx);
    let payload: AiTaggingPayload = job_context::payload(job)?;
    let llm = Llm::from_env(env)?;
    let spec = TYPE
        .budget()
        .ok_or_else(|| JobError::new(ErrorClass::NotConfigured, "ai_tagging declares no budget"))?;
    let db = env.d1("DB")?;
    let month = month_of(now_ms);
    let key = BudgetKey {
        job_type: TYPE,
        month: &month,
    };
    let mut budget = budgets::budget_open_month(&db, key, spec, now_ms).await?;
    let action = json!(budget.action().as_str());
    events.once(
        "budget.check",
        "info",
        &[
            ("month", json!(month)),
            ("budget_action", action.clone()),
            (
                "percent_used",
                json!(percent_used(budget.spent_cents, budget.limit_cents)),
            ),
            ("trigger", json!(payload.trigger)),
        ],
    );
    if !budget.action().proceeds() {
        events.once("budget.throttle", "info", &[("budget_action", action)]);
        budget_gate::count_throttle(&db, key).await;
        if budget.action() == BudgetAction::HardStop {
            return Err(budget_gate::hard_stop(TYPE, &budget, now_ms));
        }
        return Ok(Some(deferred(&month, &budget)));
    }

    let max_items = MAX_BATCHES * budget.action().batch_size();
    let lease_until = now_ms + TYPE.family().lease_ms();
    let items = feed_items::feed_item_take_untagged(&db, now_ms, lease_until, max_items).await?;
    let deadline = now_ms + i64::from(TYPE.spec().timeout_ms) - WORST_BATCH_MS;
    let mut report = Report::default();
    let mut rest: &[Item] = &items;
    let mut stopped = None;
    while !rest.is_empty() {
        let action = budget.action();
        if !action.proceeds() {
            stopped = Some(action.as_str());
            break;
        }
        if report.batches.len() == MAX_BATCHES {
            stopped = Some("max_batches");
            break;
        }
        if clock::now_ms() > deadline {
            stopped = Some("deadline");
            break;
        }
        let (chunk, later) = rest.split_at(action.batch_size().min(rest.len()));
        let calls: Vec<Call> = stream::iter(chunk)
            .map(|item| llm.tag(outbound, item))
            .buffered(CONCURRENT_CALLS)
            .collect()
            .await;
        let batch = Batch::sort(chunk, &calls, &llm, events);
        // A job-level failure ends the run: what was not reached goes back at once.
        let mut untagged = batch.untagged.clone();
        if batch.job_error.is_some() {
            untagged.extend(later.iter().map(|i| i.id));
        }
        // Spent whether or not the write below succeeds: the run record says so either way.
        spent.add(&llm, &batch, chunk, &calls);
        let (after, alerts) = write(&db, &month, &batch, &untagged, now_ms).await?;
        tagged(events, &batch);
        report.add(action, &batch);
        alerts.iter().for_each(|alert| emit(&alert.log_line()));
        budget = after;
        if let Some(e) = batch.job_error {
            return Err(e);
        }
        rest = later;
    }
    if !rest.is_empty() {
        let attrs = [
            ("stopped", json!(stopped)),
            ("tagged_count", json!(report.tagged)),
            ("total_count", json!(items.len())),
        ];
        events.once("budget.exhausted_mid_batch", "warn", &attrs);
        let ids: Vec<i64> = rest.iter().map(|i| i.id).collect();
        feed_items::feed_item_release_many(&db, &ids).await?;
    }
    Ok(Some(json!({
        "deferred": false,
        "month": month,
        "taken": items.len(),
        "tagged": report.tagged,
        "invalid": report.invalid,
        "failed": report.failed,
        "not_reached": rest.len(),
        "cost_cents": cents(spent.cost_cents),
        "batches": report.batches,
        "stopped": stopped,
        "budget": budget_view(&budget),
    })))
}

/// One round trip: the batch's tags, the items it gives back, its spend and alerts. The money
/// is gone once the calls are made, so the spend never depends on the rest: if D1 refuses the
/// batch, the spend (and its alerts) is written alone, then the job fails with D1's error (its
/// items come back when their lease ends).
async fn write(
    db: &D1Database,
    month: &str,
    batch: &Batch<'_>,
    untagged: &[i64],
    now_ms: i64,
) -> Result<(Budget, Vec<RaisedAlert>), JobError> {
    let items = ItemCounts {
        tagged: batch.tagged.len() as u32,
        failed: (batch.invalid + batch.failed) as u32,
    };
    let key = BudgetKey {
        job_type: TYPE,
        month,
    };
    let spend = budgets::budget_add_spend(db, key, &batch.spend, items, now_ms)?;
    let mut statements = feed_items::feed_item_set_tags_many(db, &batch.tagged, untagged)?;
    statements.extend(spend.iter().cloned());
    let refused = match db.batch(statements).await {
        Ok(results) => return budgets::after_spend(&results).map_err(JobError::from),
        Err(e) => e,
    };
    let results = db.batch(spend).await?;
    let (_, alerts) = budgets::after_spend(&results)?;
    alerts.iter().for_each(|alert| emit(&alert.log_line()));
    Err(JobError::new(
        ErrorClass::Internal,
        format!("D1: storing the tags failed ({refused}); their spend is recorded"),
    ))
}

#[derive(Default)]
struct Report {
    tagged: usize,
    invalid: usize,
    failed: usize,
    batches: Vec<Value>,
}

impl Report {
    fn add(&mut self, action: BudgetAction, batch: &Batch) {
        self.tagged += batch.tagged.len();
        self.invalid += batch.invalid;
        self.failed += batch.failed;
        self.batches.push(json!({
            "action": action.as_str(),
            "size": batch.spend.requests,
            "tagged": batch.tagged.len(),
            "invalid": batch.invalid,
            "failed": batch.failed,
            "cost_cents": cents(batch.spend.cost_cents),
        }));
    }
}

/// The result of a run the budget deferred (QUEUE): a success, so no attempt is spent on it.
fn deferred(month: &str, budget: &Budget) -> Value {
    json!({
        "deferred": true,
        "month": month,
        "reason": format!(
            "the {} budget is at {} %: deferred to the next run",
            TYPE.as_str(),
            percent_used(budget.spent_cents, budget.limit_cents),
        ),
        "budget": budget_view(budget),
    })
}

fn budget_view(budget: &Budget) -> Value {
    json!({
        "action": budget.action().as_str(),
        "spent_cents": cents(budget.spent_cents),
        "limit_cents": budget.limit_cents,
        "percent_used": percent_used(budget.spent_cents, budget.limit_cents),
    })
}

/// `item.tagged` for each item the batch stored (docs/operating.md "Log schema").
fn tagged(events: &SpanLog, batch: &Batch) {
    for item in &batch.tagged {
        let attrs = [
            ("item_id", json!(item.id)),
            ("topics", json!(item.tags.topics)),
            ("sentiment", json!(item.tags.sentiment)),
            ("categories", json!(item.tags.categories)),
        ];
        events.each("item.tagged", "info", &attrs);
    }
}
