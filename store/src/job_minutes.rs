//! The `job_minutes` table (shared `observe::job_minutes`): per family and minute, the attempts
//! the consumer's batches ended and the backlog the sweep read, behind the dashboard's charts
//! and the successes of stats' last hour.

use std::sync::LazyLock;

use jobs_shared::job::family::Family;
use jobs_shared::observe::execution_histogram::BUCKETS;
use jobs_shared::observe::job_minutes::{MinuteRow, MinuteTally};
use worker::{D1Database, D1PreparedStatement};

use crate::d1::{json, num};
use crate::jobs::backlog_by_family_sql;
use crate::sql::name_list;

/// The columns of the successes' duration buckets (migration 0017): `d0` to `d15`, bucket `i`
/// of shared `execution_histogram` in `di`.
fn duration_columns() -> impl Iterator<Item = String> {
    (0..BUCKETS).map(|i| format!("d{i}"))
}

/// Adds a batch's tallies to their family-minutes (one statement, for the batch's record). Its
/// SQL is built once per isolate: every consumer batch runs it.
pub fn job_minute_add_many(
    db: &D1Database,
    tallies: &[MinuteTally],
) -> worker::Result<D1PreparedStatement> {
    db.prepare(&*ADD_MANY_SQL).bind(&[json(tallies)])
}

static ADD_MANY_SQL: LazyLock<String> = LazyLock::new(add_many_sql);

fn add_many_sql() -> String {
    let columns: Vec<String> = duration_columns().collect();
    let values: Vec<String> = (0..BUCKETS)
        .map(|i| format!("t.value ->> '$.durations[{i}]'"))
        .collect();
    let sums: Vec<String> = columns
        .iter()
        .map(|d| format!("{d} = {d} + excluded.{d}"))
        .collect();
    format!(
        "INSERT INTO job_minutes (family, minute, succeeded, failed, dead, sum_ms, max_ms, \
         waited, wait_sum_ms, {columns}) \
         SELECT t.value ->> 'family', t.value ->> 'minute', t.value ->> 'succeeded', \
         (t.value ->> 'retried') + (t.value ->> 'dead'), t.value ->> 'dead', \
         t.value ->> 'duration_ms_sum', t.value ->> 'duration_ms_max', \
         t.value ->> 'waited', t.value ->> 'wait_sum_ms', {values} \
         FROM json_each(?1) t WHERE true \
         ON CONFLICT (family, minute) DO UPDATE SET succeeded = succeeded + excluded.succeeded, \
         failed = failed + excluded.failed, dead = dead + excluded.dead, \
         sum_ms = sum_ms + excluded.sum_ms, max_ms = MAX(max_ms, excluded.max_ms), \
         waited = waited + excluded.waited, wait_sum_ms = wait_sum_ms + excluded.wait_sum_ms, \
         {sums}",
        columns = columns.join(", "),
        values = values.join(", "),
        sums = sums.join(", "),
    )
}

/// Each family's successes in the minutes from `since_ms` on (rows: shared
/// `last_hour::SuccessRow`), those from `recent_ms` on counted apart: stats' last hour, read
/// through the key, at most one row per family and minute.
pub fn job_minute_success_window(
    db: &D1Database,
    since_ms: i64,
    recent_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    let sums: Vec<String> = duration_columns().map(|d| format!("SUM({d})")).collect();
    db.prepare(format!(
        "SELECT family, SUM(succeeded) AS succeeded, \
         SUM(IIF(minute >= ?2, succeeded, 0)) AS succeeded_recent, SUM(waited) AS waited, \
         SUM(wait_sum_ms) AS wait_sum_ms, MAX(max_ms) AS max_ms, json_array({sums}) AS durations \
         FROM job_minutes WHERE family IN ({families}) AND minute >= ?1 GROUP BY family",
        sums = sums.join(", "),
        families = name_list(Family::ALL.iter().map(|f| f.as_str())),
    ))
    .bind(&[num(since_ms), num(recent_ms)])
}

/// Counts each family's due backlog at `now_ms` and keeps it on the minute's row, answering it
/// (rows: `family`, `backlog`, every family): the sweep's one reading of the backlog a tick.
pub fn job_minute_record_backlog(
    db: &D1Database,
    now_ms: i64,
    minute: i64,
) -> worker::Result<D1PreparedStatement> {
    let families: Vec<&str> = Family::ALL.iter().map(|f| f.as_str()).collect();
    db.prepare(format!(
        "INSERT INTO job_minutes (family, minute, backlog) \
         SELECT f.value, ?2, COALESCE(b.backlog, 0) FROM json_each(?3) f LEFT JOIN \
         ({}) b ON b.family = f.value WHERE true \
         ON CONFLICT (family, minute) DO UPDATE SET backlog = excluded.backlog \
         RETURNING family, backlog",
        backlog_by_family_sql()
    ))
    .bind(&[num(now_ms), num(minute), json(&families)])
}

/// Every family's rows from `since_minute` on (read through the key, family by family).
pub async fn job_minute_list_since(
    db: &D1Database,
    since_minute: i64,
) -> worker::Result<Vec<MinuteRow>> {
    let families: Vec<&str> = Family::ALL.iter().map(|f| f.as_str()).collect();
    db.prepare(
        "SELECT family, minute, succeeded, failed, dead, sum_ms, max_ms, backlog \
         FROM job_minutes WHERE family IN (SELECT value FROM json_each(?2)) AND minute >= ?1",
    )
    .bind(&[num(since_minute), json(&families)])?
    .all()
    .await?
    .results()
}

/// Deletes up to `limit` rows of minutes before `before_ms` (retention).
pub fn job_minute_delete_before(
    db: &D1Database,
    before_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(
        "DELETE FROM job_minutes WHERE (family, minute) IN \
         (SELECT family, minute FROM job_minutes WHERE minute < ?1 LIMIT ?2)",
    )
    .bind(&[num(before_ms), num(limit.into())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_duration_column_is_added_by_its_migration() {
        let migration = include_str!("../../migrations/0017_success_durations_per_minute.sql");
        for column in duration_columns() {
            assert!(
                migration.contains(&format!("ADD COLUMN {column} ")),
                "{column}"
            );
        }
        assert!(!migration.contains(&format!("ADD COLUMN d{BUCKETS} ")));
    }
}
