//! Every attempt that ended in a span, as one stream of SQL rows: the failed ones from
//! `job_runs` (through `job_runs_failed`, migration 0015) with their jobs, the successes from
//! `success_batches` (migration 0016) through the view `success_attempts` (migration 0021),
//! which names the fields of each success as that row keeps it.
//! The alert rules' window and the execution histogram's roll-up read them. (Stats' last hour
//! reads the successes per minute instead, from `job_minutes`, and the failed runs as
//! `job_runs::job_run_failed_window` does.)

use worker::{D1Database, D1PreparedStatement};

/// Each family's attempts since `since_ms` (every attempt that finished since then: the failed ones from `job_runs`, the successes from `success_batches`), as the alert rules
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
             SELECT family, type, 'succeeded', NULL, duration_ms, finished_at, wait_ms, \
             latency_ms FROM success_attempts WHERE finished_at >= ?1) a) \
         GROUP BY family",
        since_ms,
        recent_ms
    )
}
