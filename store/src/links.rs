//! The `links` table: one row per URL `link_health_check` has checked, with its failing streak.
//! A check reads the links' states once and upserts every result in one statement.

use jobs_shared::handlers::link_health::LinkState;
use serde::{Deserialize, Serialize};
use worker::D1Database;

/// A link's known state.
#[derive(Deserialize)]
pub struct LinkRow {
    pub url: String,
    pub consecutive_failures: u32,
    pub first_failure_at: Option<i64>,
}

impl LinkRow {
    /// Its failing streak, as shared `after_check` reads it.
    pub fn state(&self) -> LinkState {
        LinkState {
            consecutive_failures: self.consecutive_failures,
            first_failure_at: self.first_failure_at,
        }
    }
}

/// The known state of `urls`, or of the table's links when `urls` is `None`: 500 at most (the
/// links one job checks from the table), least recently checked first.
pub async fn link_list_states(
    db: &D1Database,
    urls: Option<&[String]>,
) -> worker::Result<Vec<LinkRow>> {
    let urls = urls.map(|urls| serde_json::to_string(urls).unwrap_or_default());
    sql!(db, LinkRow =>
        "SELECT url, consecutive_failures, first_failure_at FROM links \
         WHERE ?1 IS NULL OR url IN (SELECT value FROM json_each(?1)) \
         ORDER BY last_checked_at NULLS FIRST LIMIT 500",
        urls
    )?
    .all()
    .await?
    .results()
}

/// One check's outcome, as stored.
#[derive(Serialize)]
pub struct Checked {
    pub url: String,
    pub status: &'static str,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub latency_ms: i64,
    pub final_url: String,
    pub consecutive_failures: u32,
    pub first_failure_at: Option<i64>,
}

/// Upserts every result in one statement.
pub async fn link_set_checked_many(
    db: &D1Database,
    checked: &[Checked],
    now_ms: i64,
) -> worker::Result<()> {
    let checked = serde_json::to_string(checked).unwrap_or_default();
    sql!(
        db,
        "INSERT INTO links (url, status, last_status_code, last_error, latency_ms, final_url, \
         consecutive_failures, first_failure_at, last_checked_at, created_at) \
         SELECT value ->> 'url', value ->> 'status', value ->> 'status_code', value ->> 'error', \
         value ->> 'latency_ms', value ->> 'final_url', value ->> 'consecutive_failures', \
         value ->> 'first_failure_at', ?2, ?2 FROM json_each(?1) WHERE true \
         ON CONFLICT (url) DO UPDATE SET status = excluded.status, \
         last_status_code = excluded.last_status_code, last_error = excluded.last_error, \
         latency_ms = excluded.latency_ms, final_url = excluded.final_url, \
         consecutive_failures = excluded.consecutive_failures, \
         first_failure_at = excluded.first_failure_at, last_checked_at = excluded.last_checked_at",
        checked,
        now_ms
    )?
    .run()
    .await?;
    Ok(())
}
