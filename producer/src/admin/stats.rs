//! GET /v1/admin/stats: what an operator watches. Per family and overall: job counts by
//! status, the waiting backlog (due and not running) and how long its oldest job has waited,
//! and the last hour of attempts (succeeded, retried, dead, success and failure rate, p50/p95
//! execution time, average wait from enqueue to first start, throughput over the last 5 min).
//! The screenshot family also shows its browser slots in use (`browser_slots`, README "Screenshots").

use jobs_shared::{rfc3339, ApiError, BrowserSlots, Family, JobStatus};
use jobs_store::attempts::{attempt_window, WindowRow, WINDOW_MS};
use jobs_store::jobs::{
    job_count_by_family_and_status, job_count_waiting_by_family, CountRow, WaitingRow,
};
use jobs_store::pauses::{pause_list_names, PausedRow};
use serde_json::{json, Map, Value};
use worker::{D1Database, Response};

use super::{d1, Admin};
use crate::{env_config, respond};

const RECENT_MS: i64 = 5 * 60 * 1000;

/// Everything the stats show, read in ONE D1 batch.
struct Snapshot {
    counts: Vec<CountRow>,
    waiting: Vec<WaitingRow>,
    /// Per family, then one row with family `all`.
    window: Vec<WindowRow>,
    pauses: Vec<PausedRow>,
}

/// Counts per family and status, the waiting backlog and its oldest job, and the last
/// `WINDOW_MS` of attempts ("recent": the last `RECENT_MS`, the live throughput), per
/// family and overall.
async fn snapshot(db: &D1Database, now_ms: i64) -> Result<Snapshot, ApiError> {
    let (since, recent) = (now_ms - WINDOW_MS, now_ms - RECENT_MS);
    let statements = [
        job_count_by_family_and_status(db),
        job_count_waiting_by_family(db, now_ms),
        attempt_window(db, false, since, recent),
        attempt_window(db, true, since, recent),
        pause_list_names(db),
    ]
    .into_iter()
    .collect::<worker::Result<Vec<_>>>()
    .map_err(|e| respond::internal(&e))?;
    let results = d1::batch(db, statements).await?;
    let mut window: Vec<WindowRow> = d1::rows(&results[2])?;
    window.extend(d1::rows::<WindowRow>(&results[3])?);
    Ok(Snapshot {
        counts: d1::rows(&results[0])?,
        waiting: d1::rows(&results[1])?,
        window,
        pauses: d1::rows(&results[4])?,
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
    for row in s.counts.iter().filter(|r| in_group(&r.family)) {
        let n = counts.get(&row.status).and_then(Value::as_i64).unwrap_or(0);
        counts.insert(row.status.clone(), Value::from(n + row.count));
    }
    let waiting: Vec<_> = s.waiting.iter().filter(|r| in_group(&r.family)).collect();
    let oldest = waiting.iter().filter_map(|r| r.oldest_run_at).min();
    let window = s
        .window
        .iter()
        .find(|w| w.family == family.unwrap_or("all"))
        .cloned()
        .unwrap_or_default();
    json!({
        "counts": counts,
        "backlog": waiting.iter().map(|r| r.backlog).sum::<i64>(),
        "held": waiting.iter().map(|r| r.held).sum::<i64>(),
        "oldest_waiting_secs": oldest.map(|at| (now - at).max(0) / 1000),
        "paused": family.is_some_and(|f| s.pauses.iter().any(|p| p.kind == "family" && p.name == f)),
        "last_hour": last_hour(&window),
    })
}

fn last_hour(w: &WindowRow) -> Value {
    let rate = |n: i64| (w.finished > 0).then(|| n as f64 / w.finished as f64);
    json!({
        "finished": w.finished,
        "succeeded": w.succeeded,
        "retried": w.retried,
        "dead": w.dead,
        "success_rate": rate(w.succeeded),
        "failure_rate": rate(w.retried + w.dead),
        "p50_ms": w.p50_ms,
        "p95_ms": w.p95_ms,
        "avg_wait_ms": w.avg_wait_ms.map(|ms| ms.round() as i64),
        "throughput_per_min": w.finished_recent as f64 * 60_000.0 / RECENT_MS as f64,
    })
}
