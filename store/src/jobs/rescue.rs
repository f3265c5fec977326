//! Lease rescue: a `running` job whose lease ran out lost its worker. The lost attempt gets its
//! run record (`lease_expired`) and the job goes back to its queue, or `dead` if that was its
//! last attempt (the sweep's `job_rescuer`).

use jobs_shared::job::lease::LOST_ATTEMPT;
use jobs_shared::ErrorClass::LeaseExpired;
use jobs_shared::JobStatus::{Dead, Queued, Running};
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use super::{Unsent, UNSENT_COLUMNS};
use crate::d1::num;
use crate::job_runs::record_lost_attempts_sql;

/// A job the rescue moved, as it returns it.
#[derive(Deserialize)]
pub struct Rescued {
    #[serde(flatten)]
    pub job: Unsent,
    pub status: String,
    pub attempts: u32,
    pub started_at: Option<i64>,
}

/// Up to `limit` jobs whose lease ran out by `now_ms`, the longest expired first: two
/// statements, the lost attempts' run records and the jobs' moves (rows: [`Rescued`]).
pub fn job_rescue_expired(
    db: &D1Database,
    now_ms: i64,
    limit: u32,
) -> worker::Result<[D1PreparedStatement; 2]> {
    let expired = format!(
        "SELECT id FROM jobs WHERE status = '{Running}' AND lease_until < ?1 ORDER BY lease_until LIMIT ?2"
    );
    let out_of_attempts = "attempts >= max_attempts";
    let params = [num(now_ms), num(limit.into())];
    let record_run = db
        .prepare(record_lost_attempts_sql(
            "?1",
            &format!("id IN ({expired})"),
        ))
        .bind(&params)?;
    let release = db
        .prepare(format!(
            "UPDATE jobs SET status = CASE WHEN {out_of_attempts} THEN '{Dead}' ELSE '{Queued}' END, \
             finished_at = CASE WHEN {out_of_attempts} THEN ?1 END, run_at = ?1, lease_until = NULL, \
             sent_at = NULL, error_class = '{LeaseExpired}', last_error = '{LOST_ATTEMPT}', updated_at = ?1, \
             escalated_at = NULL \
             WHERE id IN ({expired}) AND status = '{Running}' \
             RETURNING {UNSENT_COLUMNS}, status, attempts, started_at"
        ))
        .bind(&params)?;
    Ok([record_run, release])
}
