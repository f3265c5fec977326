//! SQL of the RSS refresh: one query for the sources, one batch for everything a refresh
//! writes (every source's new items and counters), whatever the number of sources.

use jobs_shared::{item_chunks, SortedEntries};
use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

/// Sources one job looks at, at most (the due ones are a subset).
const MAX_SOURCES: u32 = 500;

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

/// One source by id, or every active source, those tried longest ago (or never) first.
pub async fn sources(db: &D1Database, id: Option<&str>) -> worker::Result<Vec<SourceRow>> {
    db.prepare(format!(
        "SELECT id, name, url, is_active, error_count, last_fetched_at, refresh_interval_minutes, \
         retry_after_until FROM rss_sources WHERE (?1 IS NULL AND is_active = 1) OR id = ?1 \
         ORDER BY last_attempt_at NULLS FIRST LIMIT {MAX_SOURCES}"
    ))
    .bind(&[id.map_or(JsValue::NULL, JsValue::from_str)])?
    .all()
    .await?
    .results()
}

/// What happened to one source, to be written.
pub enum Refreshed<'a> {
    Fetched(&'a SortedEntries),
    Failed {
        error_count: u32,
        active: bool,
        message: &'a str,
        retry_after_until: Option<i64>,
    },
}

/// One source's statements; the first `inserts` return the rows they inserted.
pub struct SourceStatements {
    pub statements: Vec<D1PreparedStatement>,
    pub inserts: usize,
}

/// Statements for one source: its new items (inserted unless their GUID is known, returning
/// the new rows; in bounded chunks, jobs_shared::item_chunks) and its counters. Items written
/// now carry `created_at = now`, which is how the counter update, in the same batch, counts
/// them.
pub fn statements(
    db: &D1Database,
    source_id: &str,
    refreshed: &Refreshed,
    now_ms: i64,
) -> worker::Result<SourceStatements> {
    let id = JsValue::from_str(source_id);
    let now = JsValue::from_f64(now_ms as f64);
    match refreshed {
        Refreshed::Fetched(sorted) => {
            let new_here =
                "(SELECT count(*) FROM feed_items WHERE source_id = ?1 AND created_at = ?2)";
            let mut statements = item_chunks(&sorted.items)
                .into_iter()
                .map(|chunk| {
                    db.prepare(
                        "INSERT OR IGNORE INTO feed_items (source_id, item_guid, title, url, \
                         description, published_at, content_hash, created_at) \
                         SELECT ?1, json_extract(value, '$.guid'), json_extract(value, '$.title'), \
                         json_extract(value, '$.url'), json_extract(value, '$.description'), \
                         json_extract(value, '$.published_at'), json_extract(value, '$.content_hash'), \
                         ?2 FROM json_each(?3) RETURNING id",
                    )
                    .bind(&[id.clone(), now.clone(), chunk.into()])
                })
                .collect::<worker::Result<Vec<_>>>()?;
            let inserts = statements.len();
            statements.push(
                db.prepare(format!(
                    "UPDATE rss_sources SET error_count = 0, last_error_message = NULL, \
                     retry_after_until = NULL, last_fetched_at = ?2, last_attempt_at = ?2, updated_at = ?2, \
                     items_new = items_new + {new_here}, \
                     items_duplicate = items_duplicate + ?3 - {new_here}, \
                     items_skipped = items_skipped + ?4 WHERE id = ?1"
                ))
                .bind(&[
                    id,
                    now,
                    JsValue::from_f64((sorted.items.len() as u32 + sorted.duplicate).into()),
                    JsValue::from_f64(sorted.skipped.into()),
                ])?,
            );
            Ok(SourceStatements {
                statements,
                inserts,
            })
        }
        Refreshed::Failed {
            error_count,
            active,
            message,
            retry_after_until,
        } => Ok(SourceStatements {
            statements: vec![db
            .prepare(
                "UPDATE rss_sources SET error_count = ?2, is_active = ?3, last_error_message = ?4, \
                 retry_after_until = ?5, last_attempt_at = ?6, updated_at = ?6 WHERE id = ?1",
            )
            .bind(&[
                id,
                JsValue::from_f64((*error_count).into()),
                JsValue::from_f64(if *active { 1.0 } else { 0.0 }),
                JsValue::from_str(message),
                retry_after_until.map_or(JsValue::NULL, |t| JsValue::from_f64(t as f64)),
                now,
            ])?],
            inserts: 0,
        }),
    }
}
