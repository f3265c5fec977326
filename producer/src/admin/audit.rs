//! GET /v1/admin/audit: every admin action, newest first, paged by cursor.

use jobs_shared::api::page_cursor;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::util::time_fmt::rfc3339;
use jobs_store::audit::audit_list;
use serde_json::{json, Value};
use worker::{Env, Response};

use super::d1;
use crate::request::Request;
use crate::respond;

pub async fn list(req: &Request, env: &Env) -> Result<Response, ApiError> {
    let pairs = d1::only_params(req, &["cursor", "limit"], true)?;
    let limit = page_cursor::limit(d1::param(&pairs, "limit"), 50, 200)?;
    let before = d1::param(&pairs, "cursor")
        .map(page_cursor::decode)
        .transpose()?
        .map(|(id, _)| id);
    let db = d1::database(env)?;
    let mut rows = audit_list(&db, before, limit).await?;
    let next_cursor = super::page_end(&mut rows, limit, |row| page_cursor::encode(row.id, ""));
    let entries: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "at": rfc3339(r.at),
                "actor": r.actor,
                "action": r.action,
                "target": serde_json::from_str::<Value>(&r.target).unwrap_or(Value::Null),
                "affected": r.affected,
            })
        })
        .collect();
    respond::json(
        200,
        &json!({ "entries": entries, "next_cursor": next_cursor }),
    )
}
