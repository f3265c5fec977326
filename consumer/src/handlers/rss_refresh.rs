//! `rss_feed_refresh` (seed 000 section 10): refresh one source (`source_id`, optionally
//! `force_refresh`) or every source that is due. Each source is fetched and parsed on its own;
//! new entries are stored untagged (for ai_tagging), duplicates by GUID are counted, and a
//! failure counts toward the source's auto-disable. D1: one read, one write batch per job.
//!
//! One source: its fetch failure is the job's (a 429's Retry-After sets the retry delay).
//! All due: the job succeeds with a per-source summary; failing sources wait for the next run
//! (and a 429's Retry-After keeps the source out of it until then).

use futures::stream::{self, StreamExt};
use jobs_shared::{
    after_refresh_failure, parse_feed, refresh_decision, sort_entries, ErrorClass, JobError,
    RefreshDecision, RssFeedRefreshPayload, SortedEntries, SourceState,
};
use serde_json::{json, Value};
use worker::{D1Database, Env, Headers, Method, Request, RequestInit};

use super::fetch_timeout;
use crate::claim_store::Claimed;
use crate::outbound::Outbound;
use crate::rss_store::{self, Refreshed, SourceRow};

/// Feeds fetched at once by one job.
const CONCURRENT_FETCHES: usize = 6;
const FETCH_TIMEOUT_MS: u32 = 20_000;
const ACCEPT: &str = "application/rss+xml, application/atom+xml, application/xml;q=0.9, */*;q=0.5";

pub async fn run(job: &Claimed, env: &Env, outbound: &Outbound) -> Result<Option<Value>, JobError> {
    let payload: RssFeedRefreshPayload = super::payload(job)?;
    let db = env.d1("DB").map_err(super::d1_error)?;
    let now = crate::now_ms();
    let force = payload.force_refresh.unwrap_or(false);
    let single = payload.source_id.as_deref();
    let sources = rss_store::sources(&db, single)
        .await
        .map_err(super::d1_error)?;
    if let Some(id) = single.filter(|_| sources.is_empty()) {
        return Err(JobError::new(
            ErrorClass::InvalidPayload,
            format!("no rss source {id}"),
        ));
    }

    let mut summaries = Vec::new();
    let mut due = Vec::new();
    for source in &sources {
        match refresh_decision(&state(source), now, force) {
            RefreshDecision::Refresh => due.push(source),
            RefreshDecision::RateLimited { until_ms } if single.is_some() => {
                let wait = (until_ms - now).max(0) as u64 / 1000 + 1;
                return Err(JobError::new(
                    ErrorClass::RateLimited,
                    "the feed asked us to wait (Retry-After)",
                )
                .with_retry_after(Some(wait)));
            }
            other => summaries.push(json!({
                "id": source.id, "name": source.name, "outcome": skipped_outcome(other),
            })),
        }
    }
    let fetched: Vec<Result<SortedEntries, JobError>> = stream::iter(due.iter())
        .map(|source| fetch_feed(outbound, &source.url))
        .buffered(CONCURRENT_FETCHES)
        .collect()
        .await;

    let written = write(&db, &due, &fetched, now).await?;
    let mut first_error = None;
    for ((source, outcome), new) in due.iter().zip(&fetched).zip(written) {
        summaries.push(match outcome {
            Ok(sorted) => json!({
                "id": source.id, "name": source.name, "outcome": "refreshed", "new": new,
                "duplicate": sorted.items.len() as u32 + sorted.duplicate - new,
                "skipped": sorted.skipped,
            }),
            Err(e) => {
                first_error.get_or_insert_with(|| e.clone());
                json!({ "id": source.id, "name": source.name, "outcome": "failed", "error": e.to_string() })
            }
        });
    }
    match first_error {
        Some(e) if single.is_some() => Err(e),
        _ => Ok(Some(json!({ "sources": summaries }))),
    }
}

fn state(source: &SourceRow) -> SourceState {
    SourceState {
        is_active: source.is_active != 0,
        last_fetched_at: source.last_fetched_at,
        refresh_interval_minutes: source.refresh_interval_minutes,
        retry_after_until: source.retry_after_until,
    }
}

fn skipped_outcome(decision: RefreshDecision) -> &'static str {
    match decision {
        RefreshDecision::Inactive => "inactive",
        RefreshDecision::NotDue => "not_due",
        RefreshDecision::RateLimited { .. } => "rate_limited",
        RefreshDecision::Refresh => "refreshed",
    }
}

/// Writes every source's outcome in one batch; returns how many new items each source got.
async fn write(
    db: &D1Database,
    due: &[&SourceRow],
    fetched: &[Result<SortedEntries, JobError>],
    now: i64,
) -> Result<Vec<u32>, JobError> {
    let mut statements = Vec::new();
    let mut inserts = Vec::new(); // index of each source's INSERT in the batch
    for (source, outcome) in due.iter().zip(fetched) {
        let refreshed = match outcome {
            Ok(sorted) => Refreshed::Fetched(sorted),
            Err(e) => {
                let (error_count, active) = after_refresh_failure(source.error_count);
                Refreshed::Failed {
                    error_count,
                    active,
                    message: &e.message,
                    retry_after_until: e.retry_after_secs.map(|s| now + s as i64 * 1000),
                }
            }
        };
        inserts.push(matches!(refreshed, Refreshed::Fetched(_)).then_some(statements.len()));
        statements.extend(
            rss_store::statements(db, &source.id, &refreshed, now).map_err(super::d1_error)?,
        );
    }
    if statements.is_empty() {
        return Ok(Vec::new());
    }
    let results = db.batch(statements).await.map_err(super::d1_error)?;
    Ok(inserts
        .iter()
        .map(|at| {
            at.and_then(|i| results[i].results::<Value>().ok())
                .map_or(0, |rows| rows.len() as u32)
        })
        .collect())
}

async fn fetch_feed(outbound: &Outbound, url: &str) -> Result<SortedEntries, JobError> {
    let headers = Headers::new();
    let _ = headers.set("accept", ACCEPT);
    let _ = headers.set("user-agent", "cf-jobs-rss/1");
    let mut init = RequestInit::new();
    init.with_method(Method::Get).with_headers(headers);
    let request = Request::new_with_init(url, &init)
        .map_err(|e| JobError::new(ErrorClass::InvalidPayload, format!("bad feed URL: {e}")))?;
    let mut response = fetch_timeout::fetch(outbound, request, FETCH_TIMEOUT_MS).await?;
    fetch_timeout::check_status(&response)?;
    let text = response
        .text()
        .await
        .map_err(|e| JobError::new(ErrorClass::Network, format!("reading the feed: {e}")))?;
    let entries = parse_feed(&text)
        .map_err(|e| JobError::new(ErrorClass::ServerError, format!("unreadable feed: {e}")))?;
    Ok(sort_entries(entries))
}
