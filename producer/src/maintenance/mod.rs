//! The maintenance sweep, run by the producer's cron trigger every minute. Each service does
//! one job, and is safe when ticks overlap or repeat: every write is a compare-and-set on the
//! state it read. The recovery services (rescue, re-send, send when due, release of held jobs) page through a backlog
//! within one tick, `SweepConfig::page` rows a page, as long as the tick's `SweepBudget` lasts
//! (`paging.rs`); the others handle at most `SweepConfig::batch` rows per tick at a fixed number
//! of D1 round trips.

mod alert_evaluator;
mod dead_job_escalator;
mod group_joiner;
mod held_job_releaser;
mod histogram_rollup;
mod job_cleaner;
mod job_rescuer;
mod job_scheduler;
mod job_sender;
mod notifier;
mod outbox_resender;
mod paging;
mod periodic_job_enqueuer;
mod priority_aging;
mod stranded_job_resender;
mod tick;

use jobs_shared::observe::log_line::{emit, fault, LogLevel};
use jobs_shared::runtime::clock;
use jobs_store::job_types;
use serde_json::{Map, Value};
use worker::Env;

use tick::Tick;

/// Runs every service once; one failing (D1 hiccup) does not stop the others. Logs one line.
pub async fn run(env: &Env, now_ms: i64) {
    let db = match env.d1("DB") {
        Ok(db) => db,
        Err(e) => {
            return fault(
                LogLevel::Error,
                "sweep",
                format_args!("skipped, no D1: {e}"),
            )
        }
    };
    // Schedules may enqueue a team's own types.
    job_types::job_types_refresh(&db, clock::now_ms(), false).await;
    let tick = Tick::new(env, &db, now_ms);
    let mut report = Map::new();
    report.insert("event".into(), "sweep.completed".into());
    report.insert("level".into(), LogLevel::Info.as_str().into());
    report.insert(
        "at".into(),
        jobs_shared::util::time_fmt::rfc3339(now_ms).into(),
    );
    // Rescue first, so a job a dead worker held is back in a queue this tick.
    let results = [
        ("rescued", job_rescuer::run(&tick).await),
        ("schedules_run", periodic_job_enqueuer::run(&tick).await),
        ("sent_when_due", job_scheduler::run(&tick).await),
        ("held_released", held_job_releaser::run(&tick).await),
        ("groups_joined", group_joiner::run(&tick).await),
        ("resent", outbox_resender::run(&tick).await),
        ("stranded_resent", stranded_job_resender::run(&tick).await),
        ("aged", priority_aging::run(&tick).await),
        ("deleted", job_cleaner::run(&tick).await),
        // After the rescuer, so the deaths it found are escalated this tick.
        ("escalated", dead_job_escalator::run(&tick).await),
        ("alerts", alert_evaluator::run(&tick).await),
        ("histogram", histogram_rollup::run(&tick).await),
    ];
    for (name, result) in results {
        let value = match result {
            Ok(value) => value,
            Err(e) => {
                let message = format_args!("{name} failed, retried next tick: {e}");
                fault(LogLevel::Error, "sweep", message);
                Value::String(format!("error: {e}"))
            }
        };
        report.insert(name.into(), value);
    }
    emit(&Value::Object(report));
}
