//! `rss_feed_refresh`: refresh one source (`source_id`, optionally
//! `force_refresh`) or every source that is due. Each source is fetched, parsed and written on
//! its own terms: whatever one feed does (an HTTP error, a timeout, garbage, a body past the
//! cap, rows D1 refuses) is that source's failure, counted toward its auto-disable, and the
//! others are refreshed. New entries are stored untagged (for ai_tagging), duplicates by GUID
//! are counted. Bounds (docs/app-guide.md "rss_feed_refresh"): jobs_shared::handlers::feed::RssLimits for time,
//! jobs_shared::handlers::feed::MAX_FEED_BYTES and the entry bounds of jobs_shared::handlers::feed::sort_entries for size.
//!
//! One source: its fetch failure is the job's (a 429's Retry-After sets the retry delay; a 404
//! or 410 is retried too, `gone`), until the failure that disables the source, which ends the
//! job (`source_disabled`).
//! All due: the job succeeds with a per-source summary; failing sources wait for the next run
//! (and a 429's Retry-After keeps the source out of it until then), as do the sources the time
//! budget did not reach (`not_reached`).

use jobs_shared::job::run_details::ArtifactBody;
use jobs_shared::runtime::clock::now_ms;
use jobs_shared::runtime::vars;
use std::collections::HashSet;

use futures::stream::{self, StreamExt};
use jobs_shared::handlers::feed::{
    self, after_refresh_failure, fetch_error_type, parse_feed, refresh_decision, sort_entries,
    RefreshDecision, RssLimits, SortedEntries, SourceState, MAX_CONSECUTIVE_ERRORS, MAX_FEED_BYTES,
};
use jobs_shared::job::payloads::RssFeedRefreshPayload;
use jobs_shared::observe::log_line::{fault, LogLevel};
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use serde_json::{json, Value};
use worker::RequestInit;
use worker::{D1Database, D1PreparedStatement, Headers, Method, Request};

use crate::artifacts;
use crate::job_context::{self, HandlerRun, JobContext};
use crate::job_events::SpanLog;
use crate::outbound::fetch_timeout::{self, Fetched};
use crate::outbound::Outbound;
use jobs_store::rss_sources::{self, Refreshed, SourceRow, SourceStatements};

/// Feeds fetched at once by one job.
const CONCURRENT_FETCHES: usize = 6;
/// Item JSON gathered before it is written: bounds the memory a refresh holds.
const WRITE_EVERY_BYTES: usize = 2 * 1024 * 1024;
const ACCEPT: &str = "application/rss+xml, application/atom+xml, application/xml;q=0.9, */*;q=0.5";

/// Every attempt, failed ones too, keeps its per-source summary as its `feed_summary` artifact.
pub async fn run(ctx: &JobContext<'_>) -> HandlerRun {
    let mut summaries = Vec::new();
    let outcome = refresh(ctx, &mut summaries).await;
    let summary = json!({ "sources": summaries }).to_string();
    let made = ArtifactBody {
        kind: "feed_summary",
        content_type: "application/json",
        body: &summary,
    };
    let artifact = artifacts::keep(ctx, &made).await;
    HandlerRun::of(outcome).with_artifacts(vec![artifact])
}

async fn refresh(
    ctx: &JobContext<'_>,
    summaries: &mut Vec<Value>,
) -> Result<Option<Value>, JobError> {
    let (job, env, outbound) = (ctx.job, ctx.env, ctx.outbound);
    let started = now_ms();
    let events = &SpanLog::of(ctx);
    let payload: RssFeedRefreshPayload = job_context::payload(job)?;
    let (limits, warnings) = RssLimits::from_vars(|name| vars::string(env, name));
    for warning in warnings {
        fault(LogLevel::Warn, "config", warning);
    }
    let db = env.d1("DB")?;
    let force = payload.force_refresh.unwrap_or(false);
    let single = payload.source_id.as_deref();
    let sources = rss_sources::rss_source_list_to_refresh(&db, single).await?;
    if let Some(id) = single.filter(|_| sources.is_empty()) {
        events.once("source.not_found", "warn", &[("source_id", json!(id))]);
        return Err(JobError::new(
            ErrorClass::InvalidPayload,
            format!("no rss source {id}"),
        ));
    }

    let mut due = Vec::new();
    for source in &sources {
        match refresh_decision(&state(source), started, force) {
            RefreshDecision::Refresh => due.push(source),
            RefreshDecision::RateLimited { until_ms } if single.is_some() => {
                let wait = (until_ms - started).max(0) as u64 / 1000 + 1;
                return Err(JobError::new(
                    ErrorClass::RateLimited,
                    "the feed asked us to wait (Retry-After)",
                )
                .with_retry_after(Some(wait)));
            }
            other => {
                if matches!(other, RefreshDecision::Inactive) {
                    events.once(
                        "source.inactive",
                        "info",
                        &[("source_id", json!(source.id))],
                    );
                }
                summaries.push(json!({
                    "id": source.id, "name": source.name, "outcome": skipped_outcome(other),
                }))
            }
        }
    }

    // Only the sources this refresh claims: one another refresh is fetching (found due at the
    // same time, in the same batch) is its. The claim lasts the budget, after which nothing
    // starts; a source's write ends it, and one not reached is given back.
    let none_due = due.is_empty();
    let claim_until = started + i64::from(limits.budget_ms);
    let due_ids: Vec<&str> = due.iter().map(|s| s.id.as_str()).collect();
    let claimed: HashSet<String> = if none_due {
        HashSet::new()
    } else {
        rss_sources::rss_source_claim_many(&db, &due_ids, started, claim_until)
            .await?
            .into_iter()
            .collect()
    };
    let (due, taken): (Vec<&SourceRow>, Vec<&SourceRow>) =
        due.into_iter().partition(|s| claimed.contains(&s.id));
    for source in taken {
        summaries.push(json!({ "id": source.id, "name": source.name, "outcome": "refreshing" }));
    }

    // A feed starts only if it can end within the budget; the stream ends at the first that
    // cannot, and the rest are left for the next run.
    let mut fetches = stream::iter(due.iter().copied())
        .take_while(|_| std::future::ready(limits.may_start(started, now_ms())))
        .map(|source| async move {
            let attrs = [
                ("source_id", json!(source.id)),
                ("source_url", json!(source.url)),
            ];
            events.each("fetch.started", "info", &attrs);
            let fetch_started = now_ms();
            let outcome = fetch_feed(outbound, &source.url, limits.feed_timeout_ms).await;
            (source, outcome, now_ms() - fetch_started)
        })
        .buffered(CONCURRENT_FETCHES);
    let mut writer = Writer::new(&db, started);
    let mut first_error = None;
    let mut reached = 0;
    // Sources the platform's own limits kept from being fetched (no subrequest or connection
    // left): not the feed's failure, so left for the next run like the ones not started.
    let mut held_back = Vec::new();
    while let Some((source, outcome, fetch_ms)) = fetches.next().await {
        reached += 1;
        if let Ok(sorted) = &outcome {
            parsed(events, source, sorted);
        }
        match outcome {
            // One source asked for: the job itself comes back later.
            Err(e) if e.class == ErrorClass::Capacity && single.is_some() => return Err(e),
            Err(e) if e.class == ErrorClass::Capacity => held_back.push(source),
            outcome => writer.add(source, outcome, fetch_ms)?,
        }
        if writer.pending_bytes >= WRITE_EVERY_BYTES {
            writer.flush().await?;
        }
    }
    writer.flush().await?;
    completed(events, none_due, &writer.done);
    for (source, outcome) in writer.done {
        summaries.push(match outcome {
            Ok(stored) => json!({
                "id": source.id, "name": source.name, "outcome": "refreshed", "new": stored.new,
                "duplicate": stored.seen - stored.new, "skipped": stored.skipped,
            }),
            Err(e) => {
                first_error.get_or_insert_with(|| e.clone());
                json!({ "id": source.id, "name": source.name, "outcome": "failed", "error": e.to_string() })
            }
        });
    }
    let not_reached: Vec<&SourceRow> = held_back
        .into_iter()
        .chain(due[reached..].iter().copied())
        .collect();
    for source in &not_reached {
        summaries.push(json!({ "id": source.id, "name": source.name, "outcome": "not_reached" }));
    }
    if !not_reached.is_empty() {
        let ids: Vec<&str> = not_reached.iter().map(|s| s.id.as_str()).collect();
        rss_sources::rss_source_release_many(&db, &ids, claim_until).await?;
    }
    match first_error {
        Some(e) if single.is_some() => Err(e),
        _ => Ok(Some(json!({
            "sources": summaries,
            "not_reached": not_reached.len(),
        }))),
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

/// What a refreshed source stored: new items, entries seen (new and duplicate), skipped ones.
struct Stored {
    new: u32,
    seen: u32,
    skipped: u32,
}

/// One source's outcome, waiting to be written.
struct Pending<'a> {
    source: &'a SourceRow,
    outcome: Result<SortedEntries, JobError>,
    writes: SourceStatements,
    fetch_ms: i64,
}

/// Writes the sources' outcomes: all pending ones in one batch; if D1 refuses that batch, each
/// source alone, so rows D1 refuses fail only their own source (which is then recorded as
/// failed). Only D1 refusing a source's failure record too (D1 is down) fails the job.
struct Writer<'a> {
    db: &'a D1Database,
    now: i64,
    pending: Vec<Pending<'a>>,
    pending_bytes: usize,
    done: Vec<(&'a SourceRow, Result<Stored, JobError>)>,
}

impl<'a> Writer<'a> {
    fn new(db: &'a D1Database, now: i64) -> Writer<'a> {
        Writer {
            db,
            now,
            pending: Vec::new(),
            pending_bytes: 0,
            done: Vec::new(),
        }
    }

    fn add(
        &mut self,
        source: &'a SourceRow,
        outcome: Result<SortedEntries, JobError>,
        fetch_ms: i64,
    ) -> Result<(), JobError> {
        let (outcome, writes) = match outcome {
            Ok(sorted) => {
                self.pending_bytes += sorted.items.iter().map(|i| i.stored_len()).sum::<usize>();
                let fetched = Refreshed::Fetched(&sorted);
                let writes = rss_sources::rss_source_record_refresh(
                    self.db, &source.id, &fetched, fetch_ms, self.now,
                )?;
                (Ok(sorted), writes)
            }
            Err(e) => {
                let (writes, e) = self.failure(source, e, fetch_ms)?;
                (Err(e), writes)
            }
        };
        self.pending.push(Pending {
            source,
            outcome,
            writes,
            fetch_ms,
        });
        Ok(())
    }

    /// The source's failure record: its streak grows; at MAX_CONSECUTIVE_ERRORS it is disabled,
    /// its last error and `disabled_reason` saying why, and the failure it reports becomes
    /// `source_disabled` (nothing but an operator's re-enable can help).
    fn failure(
        &self,
        source: &SourceRow,
        e: JobError,
        fetch_ms: i64,
    ) -> worker::Result<(SourceStatements, JobError)> {
        let (error_count, active) = after_refresh_failure(source.error_count);
        let reason = (!active).then(|| {
            format!(
                "{MAX_CONSECUTIVE_ERRORS} consecutive failures; the last: {}",
                e.message
            )
        });
        let message = match &reason {
            Some(reason) => format!("disabled after {reason}"),
            None => e.message.clone(),
        };
        let error_type = fetch_error_type(&e);
        let refreshed = Refreshed::Failed {
            error_count,
            disabled_reason: reason.as_deref(),
            message: &message,
            error_type: &error_type,
            retry_after_until: e.retry_after_secs.map(|s| {
                self.now
                    .saturating_add(i64::try_from(s).unwrap_or(i64::MAX).saturating_mul(1000))
            }),
        };
        let writes = rss_sources::rss_source_record_refresh(
            self.db, &source.id, &refreshed, fetch_ms, self.now,
        )?;
        let reported = match reason {
            Some(_) => JobError::new(feed::SOURCE_DISABLED, message),
            None => e,
        };
        Ok((writes, reported))
    }

    async fn flush(&mut self) -> Result<(), JobError> {
        let pending = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        if pending.is_empty() {
            return Ok(());
        }
        let all: Vec<D1PreparedStatement> = pending
            .iter()
            .flat_map(|p| p.writes.statements.iter().cloned())
            .collect();
        match self.db.batch(all).await {
            Ok(results) => {
                let mut at = 0;
                for p in pending {
                    let n = p.writes.statements.len();
                    let new = inserted(&results[at..at + p.writes.inserts]);
                    at += n;
                    self.finish(p.source, p.outcome, new);
                }
            }
            Err(batch_error) => {
                let message = format_args!(
                    "D1 refused the write batch ({batch_error}); writing each source alone"
                );
                fault(LogLevel::Warn, "rss_refresh", message);
                for p in pending {
                    self.flush_alone(p).await?;
                }
            }
        }
        Ok(())
    }

    /// One source's write on its own; rows D1 refuses fail that source alone.
    async fn flush_alone(&mut self, p: Pending<'a>) -> Result<(), JobError> {
        let refused = match self.db.batch(p.writes.statements).await {
            Ok(results) => {
                let new = inserted(&results[..p.writes.inserts]);
                self.finish(p.source, p.outcome, new);
                return Ok(());
            }
            Err(e) => JobError::new(
                ErrorClass::Internal,
                format!("D1 refused the feed's rows: {e}"),
            ),
        };
        let (record, refused) = self.failure(p.source, refused, p.fetch_ms)?;
        self.db.batch(record.statements).await?;
        self.done.push((p.source, Err(refused)));
        Ok(())
    }

    fn finish(
        &mut self,
        source: &'a SourceRow,
        outcome: Result<SortedEntries, JobError>,
        new: u32,
    ) {
        let stored = outcome.map(|sorted| Stored {
            new,
            seen: sorted.items.len() as u32 + sorted.duplicate,
            skipped: sorted.skipped,
        });
        self.done.push((source, stored));
    }
}

/// Rows the INSERTs returned: the items that were new.
fn inserted(results: &[worker::D1Result]) -> u32 {
    results
        .iter()
        .map(|r| r.results::<Value>().map_or(0, |rows| rows.len() as u32))
        .sum()
}

/// The feed, fetched and read (request and body) within `timeout_ms` from when it has a
/// connection, its body capped at MAX_FEED_BYTES, and parsed.
async fn fetch_feed(
    outbound: &Outbound<'_>,
    url: &str,
    timeout_ms: u32,
) -> Result<SortedEntries, JobError> {
    let body = request(outbound, url, timeout_ms)
        .await?
        .body_capped(MAX_FEED_BYTES)
        .await?;
    if body.truncated {
        return Err(JobError::new(
            ErrorClass::ServerError,
            format!("the feed is over {MAX_FEED_BYTES} bytes"),
        ));
    }
    let entries = parse_feed(&body.text)
        .map_err(|e| JobError::new(ErrorClass::ServerError, format!("unreadable feed: {e}")))?;
    Ok(sort_entries(entries))
}

async fn request<'a>(
    outbound: &Outbound<'a>,
    url: &str,
    timeout_ms: u32,
) -> Result<Fetched<'a>, JobError> {
    let headers = Headers::new();
    let _ = headers.set("accept", ACCEPT);
    let _ = headers.set("user-agent", "cf-jobs-rss/1");
    let mut init = RequestInit::new();
    init.with_method(Method::Get).with_headers(headers);
    let request = Request::new_with_init(url, &init)
        .map_err(|e| JobError::new(ErrorClass::InvalidPayload, format!("bad feed URL: {e}")))?;
    let response = fetch_timeout::fetch(outbound, request, 0, timeout_ms).await?;
    let status = response.status_code();
    if matches!(status, 404 | 410) {
        return Err(JobError::new(feed::GONE, format!("HTTP {status}")));
    }
    fetch_timeout::check_status(&response)?;
    Ok(response)
}

/// A feed's `parse.completed` and each `entry.missing_fields` (docs/operating.md "Log schema").
fn parsed(events: &SpanLog, source: &SourceRow, sorted: &SortedEntries) {
    let source_id = ("source_id", json!(source.id));
    let fetched = ("items_fetched", json!(sorted.fetched()));
    events.each("parse.completed", "info", &[source_id.clone(), fetched]);
    for guid in &sorted.missing_fields {
        let attrs = [source_id.clone(), ("guid", json!(guid))];
        events.each("entry.missing_fields", "warn", &attrs);
    }
}

/// Each written source's `dedupe.completed`, then the job's `refresh.completed` (or
/// `refresh.no_sources` when none was due).
fn completed(events: &SpanLog, none_due: bool, done: &[(&SourceRow, Result<Stored, JobError>)]) {
    if none_due {
        return events.once("refresh.no_sources", "info", &[]);
    }
    for (source, stored) in done {
        if let Ok(stored) = stored {
            let attrs = [
                ("source_id", json!(source.id)),
                ("new", json!(stored.new)),
                ("duplicate", json!(stored.seen - stored.new)),
            ];
            events.each("dedupe.completed", "info", &attrs);
        }
    }
    let success = done.iter().filter(|(_, stored)| stored.is_ok()).count();
    let attrs = [
        ("sources.success", json!(success)),
        ("sources.failure", json!(done.len() - success)),
    ];
    events.once("refresh.completed", "info", &attrs);
}
