//! GET /v1/admin/stats: what an operator watches. Per family and overall: job counts by
//! status, the waiting backlog (due and not running) and how long its oldest job has waited,
//! and the last hour of attempts (succeeded, retried, dead, success and failure rate, p50/p95
//! execution time from the duration buckets, average wait from enqueue to first start,
//! throughput over the last 5 min), by whole minutes.
//! The screenshot family also shows its browser slots in use (`browser_slots`, docs/app-guide.md
//! "Screenshots").

use jobs_shared::handlers::screenshot::BrowserSlots;
use jobs_shared::job::family::Family;
use jobs_shared::job::lifecycle::JobStatus;
use jobs_shared::observe::last_hour::{
    recent_start, window_start, FailedRow, SuccessRow, Window, WINDOW_MS,
};
use jobs_shared::request::api_error::ApiError;
use jobs_shared::util::time_fmt::rfc3339;
use jobs_store::job_minutes::job_minute_success_window;
use jobs_store::job_runs::job_run_failed_window;
use jobs_store::jobs::{job_count_by_family_and_status, CountRow};
use jobs_store::pauses::{pause_list_names, PausedRow};
use serde_json::{json, Map, Value};
use worker::{D1Database, Response};

use super::{d1, Admin};
use crate::{env_config, respond};

/// Everything the stats show, read in ONE D1 batch.
struct Snapshot {
    counts: Vec<CountRow>,
    successes: Vec<SuccessRow>,
    failed: Vec<FailedRow>,
    pauses: Vec<PausedRow>,
}

/// Counts per family and status with the due backlog and its oldest job, and the last hour of
/// attempts (shared `last_hour`): each a read bounded by the live jobs or by the families,
/// minutes and buckets, not by how many jobs ran.
async fn snapshot(db: &D1Database, now_ms: i64) -> Result<Snapshot, ApiError> {
    let (since, recent) = (window_start(now_ms), recent_start(now_ms));
    let statements = [
        job_count_by_family_and_status(db, now_ms),
        job_minute_success_window(db, since, recent),
        job_run_failed_window(db, since, recent),
        pause_list_names(db),
    ]
    .into_iter()
    .collect::<worker::Result<Vec<_>>>()?;
    let results = d1::batch(db, statements).await?;
    Ok(Snapshot {
        counts: d1::rows(&results[0])?,
        successes: d1::rows(&results[1])?,
        failed: d1::rows(&results[2])?,
        pauses: d1::rows(&results[3])?,
    })
}

pub async fn get(admin: &Admin<'_>) -> Result<Response, ApiError> {
    let now = env_config::now_ms();
    let db = d1::database(admin.env)?;
    let snapshot = snapshot(&db, now).await?;
    let mut families = Map::new();
    for family in Family::ALL {
        let mut figures = group(&snapshot, Some(family.as_str()), now);
        if family == Family::Screenshot {
            let running = figures["counts"]["running"].as_i64().unwrap_or(0);
            figures["browser_slots"] = json!(BrowserSlots::new(running));
        }
        families.insert(family.as_str().to_string(), figures);
    }
    let pauses: Vec<Value> = snapshot
        .pauses
        .iter()
        .map(|p| json!({ "kind": p.kind, "name": p.name }))
        .collect();
    respond::json(
        200,
        &json!({
            "generated_at": rfc3339(now),
            "window_secs": WINDOW_MS / 1000,
            "families": families,
            "totals": group(&snapshot, None, now),
            "pauses": pauses,
        }),
    )
}

/// One family's figures, or (None) everything's.
fn group(s: &Snapshot, family: Option<&str>, now: i64) -> Value {
    let in_group = |f: &str| family.is_none_or(|want| want == f);
    let mut counts: Map<String, Value> = JobStatus::ALL
        .iter()
        .map(|st| (st.as_str().to_string(), Value::from(0)))
        .collect();
    let rows: Vec<&CountRow> = s.counts.iter().filter(|r| in_group(&r.family)).collect();
    for row in &rows {
        let n = counts.get(&row.status).and_then(Value::as_i64).unwrap_or(0);
        counts.insert(row.status.clone(), Value::from(n + row.count));
    }
    let oldest = rows.iter().filter_map(|r| r.oldest_due_at).min();
    json!({
        "counts": counts,
        "backlog": rows.iter().map(|r| r.due).sum::<i64>(),
        "held": rows.iter().map(|r| r.held).sum::<i64>(),
        "oldest_waiting_secs": oldest.map(|at| (now - at).max(0) / 1000),
        "paused": family.is_some_and(|f| s.pauses.iter().any(|p| p.kind == "family" && p.name == f)),
        "last_hour": last_hour(&Window::of(family, &s.successes, &s.failed), now),
    })
}

fn last_hour(w: &Window, now: i64) -> Value {
    let rate = |n: i64| (w.finished > 0).then(|| n as f64 / w.finished as f64);
    json!({
        "finished": w.finished,
        "succeeded": w.succeeded,
        "retried": w.retried,
        "dead": w.dead,
        "success_rate": rate(w.succeeded),
        "failure_rate": rate(w.retried + w.dead),
        "p50_ms": w.percentile_ms(50),
        "p95_ms": w.percentile_ms(95),
        "avg_wait_ms": w.avg_wait_ms(),
        "throughput_per_min": w.throughput_per_min(now),
    })
}
