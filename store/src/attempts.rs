//! Every attempt that ended in a span, as one stream of SQL rows: the failed ones from
//! `job_runs` (through `job_runs_failed`, migration 0015) with their jobs, the successes from
//! `success_batches` (migration 0016), whose `successes` keep each success as the array
//! `[type, duration_ms, wait_ms, latency_ms]` (the layout 0016 wrote, so read by position).
//! The alert rules' window and the execution histogram's roll-up read them. (Stats' last hour
//! reads the successes per minute instead, from `job_minutes`, and the failed runs as
//! `job_runs::job_run_failed_window` does.)

use worker::{D1Database, D1PreparedStatement};

/// A subquery of the attempts that finished in [`since`, `until`) (SQL expressions; `until`
/// may be `None`), one row each: `family`, `type`, `outcome`, `error_class`, `duration_ms`,
/// `finished_at` (a success's is its batch's), `wait_ms` (from enqueue to start, first runs
/// only), `latency_ms` (from the job's due time to the end). A failed run's latency reads the
/// job's due time now: exact for the runs that ended their job, the only ones read for it.
/// For execution_histogram.rs, which splices it; [`attempt_alert_window_by_family`] writes it
/// out.
pub(crate) fn attempts_sql(since: &str, until: Option<&str>) -> String {
    let before = |column: &str| until.map_or(String::new(), |u| format!(" AND {column} < {u}"));
    format!(
        "SELECT j.family, j.type, r.outcome, r.error_class, r.duration_ms, r.finished_at, \
         {FIRST_RUN_WAIT} AS wait_ms, r.finished_at - j.run_at AS latency_ms \
         FROM {failed}{run_before} \
         UNION ALL \
         SELECT b.family, s.value ->> 0, 'succeeded', NULL, s.value ->> 1, b.finished_at, \
         s.value ->> 2, s.value ->> 3 \
         FROM success_batches b, json_each(b.successes) s WHERE b.finished_at >= {since}{batch_before}",
        failed = failed_runs_since(since),
        run_before = before("r.finished_at"),
        batch_before = before("b.finished_at"),
    )
}

/// A failed run's (`r`) wait from its job's (`j`) enqueue to its start, on a first run only.
const FIRST_RUN_WAIT: &str = "CASE WHEN r.run = 1 THEN r.started_at - j.created_at END";

/// After `FROM`: the run records (`r`) of the attempts that did not succeed and finished at or
/// after `since` (an SQL expression), with their jobs (`j`), read through `job_runs_failed`.
fn failed_runs_since(since: &str) -> String {
    format!(
        "job_runs r INDEXED BY job_runs_failed JOIN jobs j ON j.id = r.job_id \
         WHERE r.outcome <> 'succeeded' AND r.finished_at >= {since}"
    )
}

/// Each family's attempts since `since_ms` (those of [`attempts_sql`]), as the alert rules
/// judge them (rows: shared `FamilyWindow`, whose `backlog` another statement reads: not
/// checked as a row): failed ones (retried or dead; a skip is no failure) and rate-limited
/// ones, the average duration, the p95 latency of those that ended their job (from the job's
/// due time, `run_at`, which is that attempt's), and the p95 duration of those since
/// `recent_ms` beside the rest's. Nearest-rank percentiles: the value at rank
/// ceil(n * 95 / 100).
pub fn attempt_alert_window_by_family(
    db: &D1Database,
    since_ms: i64,
    recent_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "SELECT family AS \"family: String\", COUNT(*) AS \"runs: i64\", \
         SUM(outcome IN ('retrying', 'dead')) AS \"failed: i64\", \
         IFNULL(SUM(error_class = 'rate_limited'), 0) AS \"rate_limited: i64\", \
         AVG(duration_ms) AS \"avg_ms: f64\", SUM(ended) AS \"ended: i64\", \
         SUM(recent) AS \"recent_runs: i64\", SUM(NOT recent) AS \"baseline_runs: i64\", \
         MAX(CASE WHEN ended AND lat_rn = (lat_n * 95 + 99) / 100 THEN latency_ms END) \
         AS \"p95_latency_ms: i64\", \
         MAX(CASE WHEN recent AND dur_rn = (dur_n * 95 + 99) / 100 THEN duration_ms END) \
         AS \"p95_recent_ms: i64\", \
         MAX(CASE WHEN NOT recent AND dur_rn = (dur_n * 95 + 99) / 100 THEN duration_ms END) \
         AS \"p95_baseline_ms: i64\" \
         FROM (SELECT a.family, a.outcome, a.error_class, a.duration_ms, a.latency_ms, \
           a.outcome IN ('succeeded', 'dead') AS ended, a.finished_at >= ?2 AS recent, \
           ROW_NUMBER() OVER (PARTITION BY a.family, a.outcome IN ('succeeded', 'dead') \
           ORDER BY a.latency_ms) AS lat_rn, \
           COUNT(*) OVER (PARTITION BY a.family, a.outcome IN ('succeeded', 'dead')) AS lat_n, \
           ROW_NUMBER() OVER (PARTITION BY a.family, a.finished_at >= ?2 \
           ORDER BY a.duration_ms) AS dur_rn, \
           COUNT(*) OVER (PARTITION BY a.family, a.finished_at >= ?2) AS dur_n \
           FROM (SELECT j.family, j.type, r.outcome, r.error_class, r.duration_ms, \
             r.finished_at, CASE WHEN r.run = 1 THEN r.started_at - j.created_at END AS wait_ms, \
             r.finished_at - j.run_at AS latency_ms \
             FROM job_runs r INDEXED BY job_runs_failed JOIN jobs j ON j.id = r.job_id \
             WHERE r.outcome <> 'succeeded' AND r.finished_at >= ?1 \
             UNION ALL \
             SELECT b.family, s.value ->> 0, 'succeeded', NULL, s.value ->> 1, b.finished_at, \
             s.value ->> 2, s.value ->> 3 \
             FROM success_batches b, json_each(b.successes) s WHERE b.finished_at >= ?1) a) \
         GROUP BY family",
        since_ms,
        recent_ms
    )
}

#[cfg(test)]
mod tests {
    use super::attempts_sql;
    use crate::sql::written;

    #[test]
    fn the_alert_window_reads_the_attempts_as_the_histogram_does() {
        let spaced = |sql: &str| sql.split_whitespace().collect::<Vec<_>>().join(" ");
        let source = spaced(&written(include_str!("attempts.rs")));
        let attempts = spaced(&attempts_sql("?1", None));
        assert!(
            source.contains(&format!("FROM ({attempts}) a)")),
            "{attempts}"
        );
    }
}
