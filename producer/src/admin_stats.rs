//! GET /v1/admin/stats: job counts per family and status, in one grouped query.

use jobs_shared::{ApiError, Family};
use serde_json::{Map, Value};
use worker::{Env, Response};

use crate::respond;

pub async fn get(env: &Env) -> Result<Response, ApiError> {
    let db = env.d1("DB").map_err(|e| respond::internal(&e))?;
    let conn = sqlx_d1::D1Connection::new(db);
    let rows = sqlx_d1::query!(
        "SELECT family, status, count(*) AS count FROM jobs GROUP BY family, status"
    )
    .fetch_all(&conn)
    .await
    .map_err(|e| respond::internal(&e))?;
    let mut families: Map<String, Value> = Family::ALL
        .iter()
        .map(|f| (f.as_str().to_string(), Value::Object(Map::new())))
        .collect();
    for row in rows {
        if let Some(Value::Object(counts)) = families.get_mut(&row.family) {
            counts.insert(row.status, row.count.into());
        }
    }
    respond::json(200, &serde_json::json!({ "families": families }))
}
