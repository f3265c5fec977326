//! SQL of ai_tagging's feed items: take a job's untagged items under a lease (one statement),
//! store a batch's tags and release the items it could not tag (statements for the batch's one
//! write), and release what a stopped job did not reach.

use jobs_shared::AiTags;
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

#[derive(Deserialize)]
pub struct Item {
    pub id: i64,
    pub title: String,
    pub url: String,
    pub description: Option<String>,
}

/// Takes up to `limit` untagged items no other job holds, oldest first, until `lease_until`.
pub async fn take(
    db: &D1Database,
    now_ms: i64,
    lease_until: i64,
    limit: usize,
) -> worker::Result<Vec<Item>> {
    let mut items: Vec<Item> = db
        .prepare(
            "UPDATE feed_items SET ai_lease_until = ?2 WHERE id IN (SELECT id FROM feed_items \
             WHERE ai_tagged = 0 AND (ai_lease_until IS NULL OR ai_lease_until <= ?1) \
             ORDER BY id LIMIT ?3) RETURNING id, title, url, description",
        )
        .bind(&[
            JsValue::from_f64(now_ms as f64),
            JsValue::from_f64(lease_until as f64),
            JsValue::from_f64(limit as f64),
        ])?
        .all()
        .await?
        .results()?;
    items.sort_by_key(|i| i.id);
    Ok(items)
}

#[derive(Serialize)]
pub struct Tagged<'a> {
    pub id: i64,
    pub tags: &'a AiTags,
}

/// Statements storing `tagged` and releasing `untagged` (both may be empty).
pub fn save(
    db: &D1Database,
    tagged: &[Tagged],
    untagged: &[i64],
) -> worker::Result<Vec<D1PreparedStatement>> {
    let mut statements = Vec::new();
    if !tagged.is_empty() {
        let rows = serde_json::to_string(tagged).unwrap_or_default();
        statements.push(
            db.prepare(
                "UPDATE feed_items SET ai_tagged = 1, ai_tags = json_extract(t.value, '$.tags'), \
                 ai_lease_until = NULL FROM json_each(?1) t \
                 WHERE feed_items.id = json_extract(t.value, '$.id')",
            )
            .bind(&[rows.into()])?,
        );
    }
    if !untagged.is_empty() {
        statements.push(release_statement(db, untagged)?);
    }
    Ok(statements)
}

/// Gives items back at once, for the next run.
pub async fn release(db: &D1Database, ids: &[i64]) -> worker::Result<()> {
    release_statement(db, ids)?.run().await?;
    Ok(())
}

fn release_statement(db: &D1Database, ids: &[i64]) -> worker::Result<D1PreparedStatement> {
    let ids = serde_json::to_string(ids).unwrap_or_default();
    db.prepare(
        "UPDATE feed_items SET ai_lease_until = NULL \
         WHERE id IN (SELECT value FROM json_each(?1)) AND ai_tagged = 0",
    )
    .bind(&[ids.into()])
}
