//! The `metric_counters` table: counters GET /metrics reads without counting a table (and the
//! histogram roll-up's watermark, see `execution_histogram`).

use jobs_shared::observe::prometheus::LabelledValue;
use worker::{D1Database, D1PreparedStatement};

/// The counter of DLQ arrivals, per family (GET /metrics' job_dead_letters_total).
pub const DEAD_LETTERS: &str = "dead_letters";

/// Adds `by` to counter `name`'s `label`.
pub fn metric_counter_add(
    db: &D1Database,
    name: &'static str,
    label: &str,
    by: i64,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "INSERT INTO metric_counters (name, label, value) VALUES (?1, ?2, ?3) \
         ON CONFLICT (name, label) DO UPDATE SET value = value + excluded.value",
        name,
        label,
        by
    )
}

/// Counter `name`, one row per label (rows: [`LabelledValue`]).
pub fn metric_counter_list(
    db: &D1Database,
    name: &'static str,
) -> worker::Result<D1PreparedStatement> {
    sql!(db, LabelledValue =>
        "SELECT label, value AS \"value: f64\" FROM metric_counters WHERE name = ?1",
        name
    )
}
