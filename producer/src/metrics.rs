//! GET /metrics: Prometheus text exposition (shared `prometheus`), for an admin token or one of
//! the METRICS_TOKENS (a scraper needs no admin rights). One D1 batch of bounded reads: the
//! pre-aggregated execution histogram (bounded by types x families x outcomes x buckets), the
//! due backlog and running screenshot jobs (index on status), and small tables (budgets,
//! counters, schedules, alerts). Nothing scans the jobs or job_runs tables.

use jobs_shared::observe::alert_rules::FamilyWindow;
use jobs_shared::observe::prometheus::{render, LabelledValue, MetricsSnapshot, CONTENT_TYPE};
use jobs_shared::{security::auth::bearer_in, ApiError, Scope, SqlValue};
use serde::Deserialize;
use worker::{Env, Request, Response};

use crate::admin::d1;
use crate::{auth, env_config, respond};

/// Each family's due backlog (what the sweep's alert evaluator reads too).
pub const BACKLOG_BY_FAMILY_SQL: &str = "SELECT family, COUNT(*) AS backlog FROM jobs \
     WHERE status IN ('scheduled', 'queued', 'retrying') AND run_at <= ?1 GROUP BY family";

#[derive(Deserialize)]
struct Count {
    value: f64,
}

pub async fn get(req: &Request, env: &Env) -> Result<Response, ApiError> {
    let header = req.headers().get("authorization").ok().flatten();
    if !bearer_in(
        header.as_deref(),
        env_config::string(env, "METRICS_TOKENS").as_deref(),
    ) {
        auth::require(req, env, Scope::Admin)?;
    }
    let db = d1::database(env)?;
    let now = SqlValue::Int(env_config::now_ms());
    let statement = |sql: &str, values: &[SqlValue]| d1::statement(&db, sql, values);
    let statements = vec![
        statement(
            "SELECT job_type, family, status, bucket, count, sum_ms FROM execution_histogram",
            &[],
        )?,
        statement(BACKLOG_BY_FAMILY_SQL, &[now])?,
        statement(
            "SELECT COUNT(*) AS value FROM jobs WHERE status = 'running' AND family = 'screenshot'",
            &[],
        )?,
        statement(
            "SELECT job_type AS label, SUM(spent_cents) AS value FROM budgets GROUP BY job_type ORDER BY job_type",
            &[],
        )?,
        statement(
            "SELECT label, value FROM metric_counters WHERE name = 'dead_letters'",
            &[],
        )?,
        statement(
            "SELECT name AS label, missed_runs AS value FROM schedules ORDER BY name",
            &[],
        )?,
        statement(
            "SELECT rule AS label, COUNT(*) AS value FROM alerts WHERE status = 'open' GROUP BY rule",
            &[],
        )?,
    ];
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
    };
    let response = Response::ok(render(&snapshot)).map_err(|e| respond::internal(&e))?;
    respond::with_headers(response, &[("content-type", CONTENT_TYPE)])
}
