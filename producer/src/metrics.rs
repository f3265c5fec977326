//! GET /metrics: Prometheus text exposition (shared `prometheus`), for an admin token or one of
//! the METRICS_TOKENS (a scraper needs no admin rights). One D1 batch of bounded reads: the
//! pre-aggregated execution histogram (bounded by types x families x outcomes x buckets), the
//! due backlog and running screenshot jobs (index on status), and small tables (budgets,
//! counters, schedules, alerts, RSS sources, flow control's keys). Nothing scans the jobs or
//! job_runs tables.

use jobs_shared::budget::month_of;
use jobs_shared::job::family::Family;
use jobs_shared::job::job_type::JobType;
use jobs_shared::observe::alert_rules::FamilyWindow;
use jobs_shared::observe::prometheus::{render, LabelledValue, MetricsSnapshot, CONTENT_TYPE};
use jobs_shared::request::api_error::ApiError;
use jobs_shared::runtime::faults;
use jobs_store::budgets::BudgetKey;
use jobs_store::metric_counters::{metric_counter_list, DEAD_LETTERS};
use jobs_store::{alerts, budgets, execution_histogram, flow_keys, jobs, rss_sources, schedules};
use serde::Deserialize;
use worker::{Env, Response};

use crate::admin::d1;
use crate::{env_config, respond};

#[derive(Deserialize)]
struct Count {
    value: f64,
}

pub async fn get(env: &Env) -> Result<Response, ApiError> {
    let db = d1::database(env)?;
    let now = env_config::now_ms();
    let tagging = JobType::AI_TAGGING;
    let month = month_of(now);
    let tagging_budget = tagging
        .budget()
        .ok_or_else(|| faults::internal(&"ai_tagging declares no budget"))?;
    let statements = [
        execution_histogram::histogram_list(&db),
        jobs::job_count_backlog_by_family(&db, now),
        jobs::job_count_running(&db, Family::Screenshot),
        budgets::budget_spent_by_type(&db),
        metric_counter_list(&db, DEAD_LETTERS),
        schedules::schedule_count_missed(&db),
        alerts::alert_count_open_by_rule(&db),
        rss_sources::rss_source_metrics(&db),
        rss_sources::rss_source_error_metrics(&db),
        budgets::budget_metrics(
            &db,
            BudgetKey {
                job_type: tagging,
                month: &month,
            },
            tagging_budget,
        ),
        flow_keys::flow_type_totals(&db),
    ]
    .into_iter()
    .collect::<worker::Result<Vec<_>>>()?;
    let results = d1::batch(&db, statements).await?;
    let backlog: Vec<FamilyWindow> = d1::rows(&results[1])?;
    let screenshot: Vec<Count> = d1::rows(&results[2])?;
    let snapshot = MetricsSnapshot {
        histogram: d1::rows(&results[0])?,
        backlog: backlog
            .into_iter()
            .map(|r| LabelledValue {
                label: r.family,
                value: r.backlog as f64,
            })
            .collect(),
        screenshot_running: screenshot.first().map_or(0.0, |c| c.value),
        budget_cents: d1::rows(&results[3])?,
        dead_letters: d1::rows(&results[4])?,
        schedule_missed: d1::rows(&results[5])?,
        alerts_open: d1::rows(&results[6])?,
        rss_sources: d1::rows(&results[7])?,
        rss_errors: d1::rows(&results[8])?,
        tagging: d1::rows(&results[9])?.pop().unwrap_or_default(),
        flow: d1::rows(&results[10])?,
    };
    let response = Response::ok(render(&snapshot))?;
    respond::with_headers(response, &[("content-type", CONTENT_TYPE)])
}
