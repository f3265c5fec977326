//! The `metric_counters` table: counters GET /metrics reads without counting a table (and the
//! histogram roll-up's watermark, see `execution_histogram`).

use worker::{D1Database, D1PreparedStatement};

use crate::d1::num;

/// The counter of DLQ arrivals, per family (GET /metrics' job_dead_letters_total).
pub const DEAD_LETTERS: &str = "dead_letters";

/// Adds `by` to counter `name`'s `label`.
pub fn metric_counter_add(
    db: &D1Database,
    name: &'static str,
    label: &str,
    by: i64,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "INSERT INTO metric_counters (name, label, value) VALUES ('{name}', ?1, ?2) \
         ON CONFLICT (name, label) DO UPDATE SET value = value + excluded.value"
    ))
    .bind(&[label.into(), num(by)])
}

/// Counter `name`, one row per label (rows: `label`, `value`).
pub fn metric_counter_list(
    db: &D1Database,
    name: &'static str,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT label, value FROM metric_counters WHERE name = '{name}'"
    ))
    .bind(&[])
}
