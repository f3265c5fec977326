//! GET /v1/admin/history?minutes=60: each family's last minutes, minute by minute (attempts
//! succeeded, failed and dead, their average and longest duration, the due backlog), for the
//! dashboard's charts. One read of at most `minutes` rows per family from `job_minutes`, which
//! the consumer and the sweep keep (shared `observe::job_minutes`); a browser may reuse the
//! answer for 15 s.

use jobs_shared::observe::job_minutes::{minute_of, series, MAX_HISTORY_MINUTES, MINUTE_MS};
use jobs_shared::request::api_error::ApiError;
use jobs_shared::request::field_error::count_param;
use jobs_shared::util::time_fmt::rfc3339;
use jobs_store::job_minutes::job_minute_list_since;
use serde_json::{json, Map, Value};
use worker::{Env, Response};

use super::d1;
use crate::request::Request;
use crate::{env_config, respond};

pub async fn get(req: &Request, env: &Env) -> Result<Response, ApiError> {
    let pairs = d1::only_params(req, &["minutes"], true)?;
    let minutes = count_param(
        "minutes",
        d1::param(&pairs, "minutes"),
        60,
        MAX_HISTORY_MINUTES as u32,
    )?;
    let now = env_config::now_ms();
    let since = minute_of(now) - (i64::from(minutes) - 1) * MINUTE_MS;
    let db = d1::database(env)?;
    let rows = job_minute_list_since(&db, since).await?;
    let families: Map<String, Value> = series(&rows, now, minutes.into())
        .into_iter()
        .map(|(family, points)| (family.as_str().to_string(), json!(points)))
        .collect();
    let body = json!({
        "minutes": minutes,
        "from": rfc3339(since),
        "families": families,
    });
    let response = respond::json(200, &body)?;
    respond::with_headers(response, &[("cache-control", "private, max-age=15")])
}
