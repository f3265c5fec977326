//! The `job_minutes` table (shared `observe::job_minutes`): per family and minute, the attempts
//! the consumer's batches ended and the backlog the sweep read, behind the dashboard's charts
//! and the successes of stats' last hour. The successes' duration buckets (migration 0017) are
//! columns `d0` to `d15`, bucket `i` of shared `execution_histogram` in `di`.

use jobs_shared::job::family::Family;
use jobs_shared::observe::job_minutes::{MinuteRow, MinuteTally};
use jobs_shared::observe::last_hour::SuccessRow;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::json_text;

/// Adds a batch's tallies to their family-minutes (one statement, for the batch's record).
pub fn job_minute_add_many(
    db: &D1Database,
    tallies: &[MinuteTally],
) -> worker::Result<D1PreparedStatement> {
    let tallies = json_text(tallies);
    sql!(
        db,
        "INSERT INTO job_minutes (family, minute, succeeded, failed, dead, sum_ms, max_ms, \
         waited, wait_sum_ms, d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11, d12, d13, d14, \
         d15) \
         SELECT t.value ->> 'family', t.value ->> 'minute', t.value ->> 'succeeded', \
         (t.value ->> 'retried') + (t.value ->> 'dead'), t.value ->> 'dead', \
         t.value ->> 'duration_ms_sum', t.value ->> 'duration_ms_max', \
         t.value ->> 'waited', t.value ->> 'wait_sum_ms', \
         t.value ->> '$.durations[0]', t.value ->> '$.durations[1]', \
         t.value ->> '$.durations[2]', t.value ->> '$.durations[3]', \
         t.value ->> '$.durations[4]', t.value ->> '$.durations[5]', \
         t.value ->> '$.durations[6]', t.value ->> '$.durations[7]', \
         t.value ->> '$.durations[8]', t.value ->> '$.durations[9]', \
         t.value ->> '$.durations[10]', t.value ->> '$.durations[11]', \
         t.value ->> '$.durations[12]', t.value ->> '$.durations[13]', \
         t.value ->> '$.durations[14]', t.value ->> '$.durations[15]' \
         FROM json_each(?1) t WHERE true \
         ON CONFLICT (family, minute) DO UPDATE SET succeeded = succeeded + excluded.succeeded, \
         failed = failed + excluded.failed, dead = dead + excluded.dead, \
         sum_ms = sum_ms + excluded.sum_ms, max_ms = MAX(max_ms, excluded.max_ms), \
         waited = waited + excluded.waited, wait_sum_ms = wait_sum_ms + excluded.wait_sum_ms, \
         d0 = d0 + excluded.d0, d1 = d1 + excluded.d1, d2 = d2 + excluded.d2, \
         d3 = d3 + excluded.d3, d4 = d4 + excluded.d4, d5 = d5 + excluded.d5, \
         d6 = d6 + excluded.d6, d7 = d7 + excluded.d7, d8 = d8 + excluded.d8, \
         d9 = d9 + excluded.d9, d10 = d10 + excluded.d10, d11 = d11 + excluded.d11, \
         d12 = d12 + excluded.d12, d13 = d13 + excluded.d13, d14 = d14 + excluded.d14, \
         d15 = d15 + excluded.d15",
        &tallies
    )
}

/// Each family's successes in the minutes from `since_ms` on (rows: shared [`SuccessRow`]), those from `recent_ms` on counted apart: stats' last hour, read
/// through the key (every family named), at most one row per family and minute.
pub fn job_minute_success_window(
    db: &D1Database,
    since_ms: i64,
    recent_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    sql!(db, SuccessRow =>
        "SELECT family AS \"family!\", SUM(succeeded) AS \"succeeded!: i64\", \
         SUM(IIF(minute >= ?2, succeeded, 0)) AS \"succeeded_recent!: i64\", \
         SUM(waited) AS \"waited!: i64\", SUM(wait_sum_ms) AS \"wait_sum_ms!: i64\", \
         MAX(max_ms) AS \"max_ms!: i64\", \
         json_array(SUM(d0), SUM(d1), SUM(d2), SUM(d3), SUM(d4), SUM(d5), SUM(d6), SUM(d7), \
         SUM(d8), SUM(d9), SUM(d10), SUM(d11), SUM(d12), SUM(d13), SUM(d14), SUM(d15)) \
         AS \"durations!: String\" \
         FROM job_minutes WHERE family IN ('high', 'default', 'screenshot', 'low', 'bulk') \
         AND minute >= ?1 GROUP BY family",
        since_ms,
        recent_ms
    )
}

/// Counts each family's due backlog at `now_ms` (as `jobs::job_count_backlog_by_family`) and
/// keeps it on the minute's row, answering it (rows: `family`, `backlog`, every family): the
/// sweep's one reading of the backlog a tick.
pub fn job_minute_record_backlog(
    db: &D1Database,
    now_ms: i64,
    minute: i64,
) -> worker::Result<D1PreparedStatement> {
    let families = json_text(&Family::ALL.map(Family::as_str));
    sql!(
        db,
        "INSERT INTO job_minutes (family, minute, backlog) \
         SELECT f.value, ?2, COALESCE(b.backlog, 0) FROM json_each(?3) f LEFT JOIN \
         (SELECT family, COUNT(*) AS backlog \
         FROM jobs INDEXED BY jobs_unfinished WHERE finished_at IS NULL \
         AND status IN ('scheduled', 'queued', 'retrying') AND run_at <= ?1 GROUP BY family) b \
         ON b.family = f.value WHERE true \
         ON CONFLICT (family, minute) DO UPDATE SET backlog = excluded.backlog \
         RETURNING family, backlog",
        now_ms,
        minute,
        &families
    )
}

/// Every family's rows from `since_minute` on (read through the key, family by family).
pub async fn job_minute_list_since(
    db: &D1Database,
    since_minute: i64,
) -> worker::Result<Vec<MinuteRow>> {
    let families = json_text(&Family::ALL.map(Family::as_str));
    // Rows as shared `MinuteRow` reads them (its counts flattened): not checked as a row.
    sql!(
        db,
        "SELECT family, minute, succeeded, failed, dead, sum_ms, max_ms, backlog \
         FROM job_minutes WHERE family IN (SELECT value FROM json_each(?2)) AND minute >= ?1",
        since_minute,
        &families
    )?
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
    sql!(
        db,
        "DELETE FROM job_minutes WHERE (family, minute) IN \
         (SELECT family, minute FROM job_minutes WHERE minute < ?1 LIMIT ?2)",
        before_ms,
        limit
    )
}

#[cfg(test)]
mod tests {
    use jobs_shared::job::family::Family;
    use jobs_shared::observe::execution_histogram::BUCKETS;

    #[test]
    fn every_duration_bucket_is_a_column_each_statement_names() {
        let migration = include_str!("../../migrations/0017_success_durations_per_minute.sql");
        let source = crate::sql::written(include_str!("job_minutes.rs"));
        for i in 0..BUCKETS {
            assert!(migration.contains(&format!("ADD COLUMN d{i} ")), "d{i}");
            for written in [
                format!("'$.durations[{i}]'"),
                format!("d{i} = d{i} + excluded.d{i}"),
                format!("SUM(d{i})"),
            ] {
                assert!(source.contains(&written), "{written}");
            }
        }
        assert!(!migration.contains(&format!("ADD COLUMN d{BUCKETS} ")));
    }

    #[test]
    fn the_success_window_names_every_family() {
        let names: Vec<String> = Family::ALL
            .iter()
            .map(|f| format!("'{}'", f.as_str()))
            .collect();
        let list = format!("family IN ({})", names.join(", "));
        let source = crate::sql::written(include_str!("job_minutes.rs"));
        assert!(source.contains(&list), "{list}");
    }
}
