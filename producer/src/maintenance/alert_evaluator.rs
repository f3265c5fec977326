//! The alert rules (shared `alert_rules`), evaluated every tick from one D1 batch of bounded
//! reads: each family's due backlog and running jobs (index on status), the last hour of
//! attempts (store `attempts`: failed runs by finish time, success batches), late schedules (a small table, plus the last hour of
//! schedule runs), this month's budget alerts, and the alerts table itself (one row per rule
//! and key). A rule that starts firing opens its alert once; while it fires nothing more is
//! written or sent; when it clears the alert is resolved (PagerDuty `resolve`, a chat
//! "resolved"). `alerts.notified` remembers what the channel was last told, so a failed send
//! is retried next tick and a delivered one is never repeated. Each tick also writes every
//! family's backlog to Analytics Engine (binding METRICS), when bound, and to the minute's row
//! of `job_minutes` (the dashboard's charts) in the same statement that counts it.

use futures::future::join_all;
use jobs_shared::budget::{self, RaisedAlert};
use jobs_shared::job::family::Family;
use jobs_shared::observe::alert_rules::{
    alert_channel, changes, firing, AlertConfig, FamilyWindow, Firing, LateSchedule, LongRunning,
    Observations, StoredAlert,
};
use jobs_shared::observe::analytics_points::backlog_point;
use jobs_shared::observe::escalation::{pagerduty_alert, slack_alert, EscalationConfig};
use jobs_shared::observe::job_minutes::minute_of;
use jobs_shared::observe::last_hour::WINDOW_MS;
use jobs_shared::observe::log_line::{emit, event_line, fault, LogLevel};
use jobs_shared::runtime::analytics_write::write_points_to;
use jobs_shared::util::severity::Severity;
use jobs_store::alerts::{self, AlertKey, AlertRow};
use jobs_store::attempts::attempt_alert_window_by_family;
use jobs_store::budget_alerts::{budget_alert_list_month, budget_alert_set_notified};
use jobs_store::job_minutes::job_minute_record_backlog;
use jobs_store::jobs::{job_count_running_by_family, RunningRow};
use jobs_store::schedules::schedule_list_late;
use serde_json::{json, Value};
use worker::D1PreparedStatement;

use super::notifier;
use super::tick::Tick;
use crate::env_config;

const HOUR_MS: i64 = 3_600_000;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    let (config, warnings) = AlertConfig::from_vars(|name| env_config::string(tick.env, name));
    warnings
        .iter()
        .for_each(|w| fault(LogLevel::Error, "config", w));
    let now = tick.now_ms;
    let db = tick.db;
    let reads = vec![
        job_minute_record_backlog(db, now, minute_of(now))?,
        job_count_running_by_family(db, now - config.running_secs * 1000)?,
        attempt_alert_window_by_family(db, now - WINDOW_MS, now - config.spike_window_secs * 1000)?,
        schedule_list_late(db, now - config.schedule_grace_secs * 1000, now - HOUR_MS)?,
        budget_alert_list_month(db, &budget::month_of(now))?,
        alerts::alert_list(db)?,
    ];
    let results = tick.db.batch(reads).await?;
    let backlog: Vec<FamilyWindow> = results[0].results()?;
    let running: Vec<RunningRow> = results[1].results()?;
    let window: Vec<FamilyWindow> = results[2].results()?;
    let stored: Vec<AlertRow> = results[5].results()?;
    let budgets: Vec<RaisedAlert> = results[4].results()?;
    write_backlog_points(tick, &backlog, &running);

    let obs = Observations {
        families: Family::ALL
            .iter()
            .map(|f| {
                let of =
                    |rows: &[FamilyWindow]| rows.iter().find(|r| r.family == f.as_str()).cloned();
                let (b, w) = (
                    of(&backlog).unwrap_or_default(),
                    of(&window).unwrap_or_default(),
                );
                FamilyWindow {
                    family: f.as_str().into(),
                    backlog: b.backlog,
                    ..w
                }
            })
            .collect(),
        long_running: running
            .iter()
            .filter(|r| r.long_running > 0)
            .map(|r| LongRunning {
                family: r.family.clone(),
                count: r.long_running,
                oldest_started_at: r.oldest_started_at.unwrap_or(now),
            })
            .collect(),
        schedules: results[3].results::<LateSchedule>()?,
        budgets,
    };
    let fired = firing(&obs, &config, now);
    let stored_alerts: Vec<StoredAlert> = stored.iter().map(AlertRow::stored).collect();
    let (to_open, to_resolve) = changes(&fired, &stored_alerts);
    let pending = if to_open.is_empty() && to_resolve.is_empty() {
        stored
            .into_iter()
            .filter(|r| r.notified.as_deref() != Some(r.status.as_str()))
            .collect()
    } else {
        write_changes(tick, &to_open, &to_resolve, !obs.budgets.is_empty()).await?
    };
    let notified = notify(tick, &pending).await?;
    Ok(json!({
        "firing": fired.len(),
        "opened": to_open.len(),
        "resolved": to_resolve.len(),
        "notified": notified,
    }))
}

/// Opens and resolves in one batch (each a compare-and-set on the status read), marks this
/// month's budget alerts passed on, and reads back what the channels have not been told.
async fn write_changes(
    tick: &Tick<'_>,
    to_open: &[&Firing],
    to_resolve: &[&StoredAlert],
    budgets: bool,
) -> worker::Result<Vec<AlertRow>> {
    let (db, now) = (tick.db, tick.now_ms);
    let mut statements: Vec<D1PreparedStatement> = Vec::new();
    for f in to_open {
        log_change("alert.opened", f.rule, &f.key, Some(&f.summary));
        let key = AlertKey {
            rule: f.rule,
            key: &f.key,
        };
        statements.push(alerts::alert_open(
            db,
            key,
            f.severity.as_str(),
            &f.summary,
            now,
        )?);
    }
    for s in to_resolve {
        log_change("alert.resolved", &s.rule, &s.key, None);
        let key = AlertKey {
            rule: &s.rule,
            key: &s.key,
        };
        statements.push(alerts::alert_resolve(db, key, now)?);
    }
    if budgets {
        // The budget module's queue of raised alerts (0005): they are in `alerts` now.
        statements.push(budget_alert_set_notified(db, now)?);
    }
    statements.push(alerts::alert_list_unnotified(db)?);
    let results = tick.db.batch(statements).await?;
    results.last().map_or(Ok(Vec::new()), |r| r.results())
}

/// Tells each alert's channel about its change; records what was delivered.
async fn notify(tick: &Tick<'_>, pending: &[AlertRow]) -> worker::Result<usize> {
    if pending.is_empty() {
        return Ok(0);
    }
    let config = EscalationConfig::from_vars(|name| env_config::string(tick.env, name));
    let results = join_all(pending.iter().map(|row| {
        let config = &config;
        async move {
            let a = row;
            // A severity the table should not hold reads as a warning.
            let severity = Severity::parse(&row.severity).unwrap_or(Severity::Warning);
            let open = (a.status == "open").then_some((severity, row.summary.as_str()));
            let page = |key: &str| pagerduty_alert(key, &a.rule, &a.key, open);
            let chat = || slack_alert(&a.rule, &a.key, open);
            notifier::deliver(config, alert_channel(&a.key), page, chat).await
        }
    }))
    .await;
    let mut statements = Vec::new();
    for (row, result) in pending.iter().zip(results) {
        let a = row;
        let key = AlertKey {
            rule: &a.rule,
            key: &a.key,
        };
        match result {
            Ok(_) => statements.push(alerts::alert_set_notified(tick.db, key, &a.status)?),
            Err(e) => {
                let message = format_args!(
                    "alert {}/{} notification failed, retried next tick: {e}",
                    a.rule, a.key
                );
                fault(LogLevel::Error, "alert_evaluator", message)
            }
        }
    }
    let delivered = statements.len();
    if !statements.is_empty() {
        tick.db.batch(statements).await?;
    }
    Ok(delivered)
}

fn log_change(event: &str, rule: &str, key: &str, summary: Option<&str>) {
    let level = if event == "alert.opened" {
        LogLevel::Warn
    } else {
        LogLevel::Info
    };
    let fields = json!({ "rule": rule, "key": key, "summary": summary });
    emit(&event_line(event, level, fields));
}

/// One Analytics Engine data point per family and tick: index family; blob1 family; double1
/// backlog, double2 running. Skipped when the binding is absent.
fn write_backlog_points(tick: &Tick<'_>, backlog: &[FamilyWindow], running: &[RunningRow]) {
    let Ok(dataset) = tick.env.analytics_engine("METRICS") else {
        return;
    };
    let points: Vec<_> = Family::ALL
        .iter()
        .map(|family| {
            let name = family.as_str();
            let waiting = backlog
                .iter()
                .find(|r| r.family == name)
                .map_or(0, |r| r.backlog);
            let busy = running
                .iter()
                .find(|r| r.family == name)
                .map_or(0, |r| r.running);
            backlog_point(name, waiting as f64, busy as f64)
        })
        .collect();
    write_points_to(&dataset, &points);
}
