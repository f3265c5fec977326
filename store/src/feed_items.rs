//! The `feed_items` table: the entries `rss_feed_refresh` stores (untagged, once per GUID) and
//! `ai_tagging` tags. A tagging job takes its items under a lease (one statement), stores a
//! batch's tags and releases the items it could not tag (statements for the batch's one write),
//! and releases what a stopped job did not reach.

use jobs_shared::handlers::ai_tags::AiTags;
use jobs_shared::handlers::feed::item_chunks;
use jobs_shared::handlers::feed::NewFeedItem;
use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement};

/// Statements inserting one source's new items (shared `NewFeedItem`, by its fields' names)
/// unless their GUID is known, each returning the ids it inserted, in bounded chunks
/// (jobs_shared::handlers::feed::item_chunks). They carry `created_at = now`, which the source's
/// counters count them by (`rss_sources::rss_source_record_refresh`).
pub fn feed_item_insert_many(
    db: &D1Database,
    source_id: &str,
    items: &[NewFeedItem],
    now_ms: i64,
) -> worker::Result<Vec<D1PreparedStatement>> {
    item_chunks(items)
        .into_iter()
        .map(|chunk| {
            sql!(
                db,
                "INSERT OR IGNORE INTO feed_items (source_id, item_guid, title, url, \
                 description, published_at, content_hash, created_at) \
                 SELECT ?1, value ->> 'guid', value ->> 'title', value ->> 'url', \
                 value ->> 'description', value ->> 'published_at', value ->> 'content_hash', \
                 ?2 FROM json_each(?3) RETURNING id",
                source_id,
                now_ms,
                chunk
            )
        })
        .collect()
}

/// An item as the tagging prompt reads it.
#[derive(Deserialize)]
pub struct Item {
    pub id: i64,
    pub title: String,
    pub url: String,
    pub description: Option<String>,
}

/// Takes up to `limit` untagged items no other job holds, oldest first, until `lease_until`.
pub async fn feed_item_take_untagged(
    db: &D1Database,
    now_ms: i64,
    lease_until: i64,
    limit: usize,
) -> worker::Result<Vec<Item>> {
    let limit = limit as i64;
    let mut items: Vec<Item> = sql!(db, Item =>
        "UPDATE feed_items SET ai_lease_until = ?2 WHERE id IN (SELECT id FROM feed_items \
         WHERE ai_tagged = 0 AND (ai_lease_until IS NULL OR ai_lease_until <= ?1) \
         ORDER BY id LIMIT ?3) RETURNING id AS \"id!\", title, url, description",
        now_ms,
        lease_until,
        limit
    )?
    .all()
    .await?
    .results()?;
    items.sort_by_key(|i| i.id);
    Ok(items)
}

/// One item's tags, to be stored.
#[derive(Serialize)]
pub struct Tagged<'a> {
    pub id: i64,
    pub tags: &'a AiTags,
}

/// Statements storing `tagged` and releasing `untagged` (both may be empty: no statement then).
pub fn feed_item_set_tags_many(
    db: &D1Database,
    tagged: &[Tagged],
    untagged: &[i64],
) -> worker::Result<Vec<D1PreparedStatement>> {
    let mut statements = Vec::new();
    if !tagged.is_empty() {
        let tagged = serde_json::to_string(tagged).unwrap_or_default();
        statements.push(sql!(
            db,
            "UPDATE feed_items SET ai_tagged = 1, ai_tags = t.value ->> 'tags', \
             ai_lease_until = NULL FROM json_each(?1) t WHERE feed_items.id = t.value ->> 'id'",
            tagged
        )?);
    }
    if !untagged.is_empty() {
        statements.push(release(db, untagged)?);
    }
    Ok(statements)
}

/// Gives items back at once, for the next run.
pub async fn feed_item_release_many(db: &D1Database, ids: &[i64]) -> worker::Result<()> {
    release(db, ids)?.run().await?;
    Ok(())
}

fn release(db: &D1Database, ids: &[i64]) -> worker::Result<D1PreparedStatement> {
    let ids = serde_json::to_string(ids).unwrap_or_default();
    sql!(
        db,
        "UPDATE feed_items SET ai_lease_until = NULL \
         WHERE id IN (SELECT value FROM json_each(?1)) AND ai_tagged = 0",
        ids
    )
}
