//! The `rss_sources` table: the feeds `rss_feed_refresh` reads, with their error streaks and
//! item counters, and the admin routes that list, add and re-enable them. A refresh reads its
//! sources in one query, claims the due ones in one, and writes everything (every source's new
//! items and counters, which end its claim) in one batch, whatever the number of sources.

use jobs_shared::handlers::feed::SortedEntries;
use jobs_shared::handlers::feed::{NewSource, SourcePatch};
use jobs_shared::observe::prometheus::{RssErrorCount, RssSourceCounts};
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use crate::audit::{write_audited, Entry};
use crate::feed_items::feed_item_insert_many;

/// What a refresh needs to decide whether a source is due.
#[derive(Deserialize)]
pub struct SourceRow {
    pub id: String,
    pub name: String,
    pub url: String,
    pub is_active: u32,
    pub error_count: u32,
    pub last_fetched_at: Option<i64>,
    pub refresh_interval_minutes: u32,
    pub retry_after_until: Option<i64>,
}

/// One source by id, or every active source, those tried longest ago (or never) first: 500 at
/// most (the due ones are a subset).
pub async fn rss_source_list_to_refresh(
    db: &D1Database,
    id: Option<&str>,
) -> worker::Result<Vec<SourceRow>> {
    sql!(db, SourceRow =>
        "SELECT id, name, url, is_active, error_count, last_fetched_at, refresh_interval_minutes, \
         retry_after_until FROM rss_sources WHERE (?1 IS NULL AND is_active = 1) OR id = ?1 \
         ORDER BY last_attempt_at NULLS FIRST LIMIT 500",
        id
    )?
    .all()
    .await?
    .results()
}

/// Claims the sources `ids` for one refresh until `until_ms` (migration 0019): those no other
/// refresh holds at `now_ms`. Returns the ids claimed.
pub async fn rss_source_claim_many(
    db: &D1Database,
    ids: &[&str],
    now_ms: i64,
    until_ms: i64,
) -> worker::Result<Vec<String>> {
    #[derive(Deserialize)]
    struct Claimed {
        id: String,
    }
    let ids = serde_json::to_string(ids).unwrap_or_default();
    let claimed: Vec<Claimed> = sql!(db, Claimed =>
        "UPDATE rss_sources SET refreshing_until = ?3 \
         WHERE id IN (SELECT value FROM json_each(?1)) \
         AND (refreshing_until IS NULL OR refreshing_until <= ?2) RETURNING id",
        ids,
        now_ms,
        until_ms
    )?
    .all()
    .await?
    .results()?;
    Ok(claimed.into_iter().map(|c| c.id).collect())
}

/// Ends the claim (until `until_ms`) of the sources `ids` the refresh did not reach; a source
/// it wrote ended its claim in that write.
pub async fn rss_source_release_many(
    db: &D1Database,
    ids: &[&str],
    until_ms: i64,
) -> worker::Result<()> {
    let ids = serde_json::to_string(ids).unwrap_or_default();
    sql!(
        db,
        "UPDATE rss_sources SET refreshing_until = NULL \
         WHERE id IN (SELECT value FROM json_each(?1)) AND refreshing_until = ?2",
        ids,
        until_ms
    )?
    .run()
    .await?;
    Ok(())
}

/// What happened to one source, to be written.
pub enum Refreshed<'a> {
    Fetched(&'a SortedEntries),
    /// `disabled_reason`: set when this failure disables the source; `error_type`: the
    /// failure's key in `errors_by_type` (`jobs_shared::handlers::feed::fetch_error_type`).
    Failed {
        error_count: u32,
        disabled_reason: Option<&'a str>,
        message: &'a str,
        retry_after_until: Option<i64>,
        error_type: &'a str,
    },
}

/// One source's statements; the first `inserts` return the rows they inserted.
pub struct SourceStatements {
    pub statements: Vec<D1PreparedStatement>,
    pub inserts: usize,
}

/// Statements for one source's refresh, for the refresh's one batch: its new items
/// ([`feed_item_insert_many`]) and its counters, or its failure; either adds `fetch_ms` (the
/// fetch and parse) to the source's fetch time of its result.
pub fn rss_source_record_refresh(
    db: &D1Database,
    source_id: &str,
    refreshed: &Refreshed,
    fetch_ms: i64,
    now_ms: i64,
) -> worker::Result<SourceStatements> {
    match refreshed {
        Refreshed::Fetched(sorted) => {
            let mut statements = feed_item_insert_many(db, source_id, &sorted.items, now_ms)?;
            let inserts = statements.len();
            statements.push(rss_source_set_fetched(
                db, source_id, sorted, fetch_ms, now_ms,
            )?);
            Ok(SourceStatements {
                statements,
                inserts,
            })
        }
        Refreshed::Failed {
            error_count,
            disabled_reason,
            message,
            retry_after_until,
            error_type,
        } => Ok(SourceStatements {
            statements: vec![sql!(
                db,
                "UPDATE rss_sources SET error_count = ?2, is_active = ?3 IS NULL, \
                 last_error_message = ?4, retry_after_until = ?5, last_attempt_at = ?6, \
                 updated_at = ?6, disabled_reason = ?3, refreshing_until = NULL, \
                 disabled_at = CASE WHEN ?3 IS NULL THEN NULL ELSE ?6 END, \
                 errors_by_type = json_set(COALESCE(errors_by_type, '{}'), \
                   '$.' || json_quote(?7), \
                   COALESCE(json_extract(errors_by_type, '$.' || json_quote(?7)), 0) + 1), \
                 fetch_failed_count = fetch_failed_count + 1, \
                 fetch_failed_ms = fetch_failed_ms + ?8 WHERE id = ?1",
                source_id,
                error_count,
                disabled_reason,
                message,
                retry_after_until,
                now_ms,
                error_type,
                fetch_ms
            )?],
            inserts: 0,
        }),
    }
}

/// A fetched source's counters, after its items' inserts in the same batch: the items written
/// now carry `created_at = now`, which is how this counts the new ones (the rest of the sorted
/// items were duplicates).
fn rss_source_set_fetched(
    db: &D1Database,
    source_id: &str,
    sorted: &SortedEntries,
    fetch_ms: i64,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    let (read, skipped) = (sorted.items.len() as u32 + sorted.duplicate, sorted.skipped);
    sql!(
        db,
        "UPDATE rss_sources SET error_count = 0, last_error_message = NULL, \
         retry_after_until = NULL, last_fetched_at = ?2, last_attempt_at = ?2, updated_at = ?2, \
         refreshing_until = NULL, \
         items_new = items_new + \
           (SELECT count(*) FROM feed_items WHERE source_id = ?1 AND created_at = ?2), \
         items_duplicate = items_duplicate + ?3 - \
           (SELECT count(*) FROM feed_items WHERE source_id = ?1 AND created_at = ?2), \
         items_skipped = items_skipped + ?4, \
         fetch_ok_count = fetch_ok_count + 1, fetch_ok_ms = fetch_ok_ms + ?5 WHERE id = ?1",
        source_id,
        now_ms,
        read,
        skipped,
        fetch_ms
    )
}

/// Every source's item and fetch-time counters, for GET /metrics (rows: shared
/// [`RssSourceCounts`], its counts read as f64).
pub fn rss_source_metrics(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    sql!(db, RssSourceCounts =>
        "SELECT id AS source_id, items_new AS \"items_new: f64\", \
         items_duplicate AS \"items_duplicate: f64\", fetch_ok_count AS \"fetch_ok_count: f64\", \
         fetch_ok_ms AS \"fetch_ok_ms: f64\", fetch_failed_count AS \"fetch_failed_count: f64\", \
         fetch_failed_ms AS \"fetch_failed_ms: f64\" FROM rss_sources ORDER BY id")
}

/// Every source's failed fetches by error type, for GET /metrics (rows: shared
/// [`RssErrorCount`]). The casts change no value (a key is text, a count an integer): sqlx-d1
/// cannot read `json_each`'s own columns, but can an expression of them.
pub fn rss_source_error_metrics(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    sql!(db, RssErrorCount =>
        "SELECT s.id AS source_id, CAST(e.key AS TEXT) AS \"error_type!: String\", \
         CAST(e.value AS INTEGER) AS \"count!: f64\" \
         FROM rss_sources s, json_each(s.errors_by_type) e ORDER BY s.id, e.key")
}

/// A source as the admin routes show it.
#[derive(Deserialize)]
pub struct RssSource {
    pub id: String,
    pub name: String,
    pub url: String,
    pub refresh_interval_minutes: i64,
    pub is_active: i64,
    pub error_count: i64,
    pub last_error_message: Option<String>,
    pub last_fetched_at: Option<i64>,
    pub last_attempt_at: Option<i64>,
    pub retry_after_until: Option<i64>,
    pub items_new: i64,
    pub items_duplicate: i64,
    pub items_skipped: i64,
    pub disabled_reason: Option<String>,
    pub disabled_at: Option<i64>,
    pub created_at: i64,
}

/// Every source, oldest first.
pub async fn rss_source_list(db: &D1Database) -> worker::Result<Vec<RssSource>> {
    sql!(db, RssSource =>
        "SELECT id, name, url, refresh_interval_minutes, is_active, error_count, \
         last_error_message, last_fetched_at, last_attempt_at, retry_after_until, items_new, \
         items_duplicate, items_skipped, disabled_reason, disabled_at, created_at \
         FROM rss_sources ORDER BY created_at, id")?
    .all()
    .await?
    .results()
}

/// Adds a source; `None` when one with its URL exists.
pub async fn rss_source_insert(
    db: &D1Database,
    id: String,
    source: &NewSource,
    entry: &Entry<'_>,
) -> worker::Result<Option<RssSource>> {
    let insert = sql!(db, RssSource =>
        "INSERT INTO rss_sources (id, name, url, refresh_interval_minutes, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (url) DO NOTHING \
         RETURNING id, name, url, refresh_interval_minutes, is_active, error_count, \
         last_error_message, last_fetched_at, last_attempt_at, retry_after_until, items_new, \
         items_duplicate, items_skipped, disabled_reason, disabled_at, created_at",
        id,
        source.name,
        source.url,
        source.refresh_interval_minutes,
        entry.now_ms
    )?;
    write_audited(db, insert, entry).await
}

/// Enables or disables a source; enabling it (or the patch's `error_count: 0`) clears its error
/// streak, and enabling it a feed's Retry-After wait and why it was disabled. Disabling an
/// active source records `disabled_reason` (an already disabled one keeps its own). `None`
/// when there is no such source.
pub async fn rss_source_set_active(
    db: &D1Database,
    id: &str,
    patch: SourcePatch,
    disabled_reason: &str,
    entry: &Entry<'_>,
) -> worker::Result<Option<RssSource>> {
    let update = sql!(db, RssSource =>
        "UPDATE rss_sources SET is_active = COALESCE(?2, is_active), updated_at = ?3, \
         error_count = CASE WHEN ?4 = 1 THEN 0 ELSE error_count END, \
         last_error_message = CASE WHEN ?4 = 1 THEN NULL ELSE last_error_message END, \
         retry_after_until = CASE WHEN ?2 = 1 THEN NULL ELSE retry_after_until END, \
         disabled_reason = CASE WHEN ?2 = 1 THEN NULL \
           WHEN ?2 = 0 AND is_active = 1 THEN ?5 ELSE disabled_reason END, \
         disabled_at = CASE WHEN ?2 = 1 THEN NULL \
           WHEN ?2 = 0 AND is_active = 1 THEN ?3 ELSE disabled_at END \
         WHERE id = ?1 RETURNING id, name, url, refresh_interval_minutes, is_active, error_count, \
         last_error_message, last_fetched_at, last_attempt_at, retry_after_until, items_new, \
         items_duplicate, items_skipped, disabled_reason, disabled_at, created_at",
        id,
        patch.is_active,
        entry.now_ms,
        patch.resets_errors(),
        disabled_reason
    )?;
    write_audited(db, update, entry).await
}
