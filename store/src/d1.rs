//! What every table module shares: values as D1 binds them, and a round trip counted in
//! `D1Stats` (the benchmark and the Server-Timing header read those counts).

use jobs_shared::{D1Stats, SqlValue};
use serde::Serialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, D1Result};

/// An integer as the JS number D1 binds (job fields stay far below 2^53).
pub fn num(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

pub fn opt_str(s: Option<&str>) -> JsValue {
    s.map_or(JsValue::NULL, JsValue::from_str)
}

/// `value` as one JSON text parameter, for `json_each(?)`.
pub fn json<T: Serialize + ?Sized>(value: &T) -> JsValue {
    JsValue::from_str(&serde_json::to_string(value).unwrap_or_default())
}

/// A statement with its `?` placeholders bound in order.
pub fn statement(
    db: &D1Database,
    sql: &str,
    values: &[SqlValue],
) -> worker::Result<D1PreparedStatement> {
    let values: Vec<JsValue> = values
        .iter()
        .map(|v| match v {
            SqlValue::Text(s) => JsValue::from_str(s),
            SqlValue::Int(n) => num(*n),
            SqlValue::Null => JsValue::NULL,
        })
        .collect();
    db.prepare(sql).bind(&values)
}

pub fn text(s: impl Into<String>) -> SqlValue {
    SqlValue::Text(s.into())
}

/// One D1 round trip, counted with the rows D1 says it read and wrote.
pub async fn counted_batch(
    db: &D1Database,
    statements: Vec<D1PreparedStatement>,
    stats: &mut D1Stats,
) -> worker::Result<Vec<D1Result>> {
    let results = db.batch(statements).await?;
    stats.add_round_trip(results.iter().map(|r| {
        r.meta().ok().flatten().map_or((None, None, None), |m| {
            (m.rows_read, m.rows_written, m.duration)
        })
    }));
    Ok(results)
}

/// Whether D1 answers at all (GET /healthz).
pub async fn ping(db: &D1Database) -> bool {
    db.prepare("SELECT 1").run().await.is_ok()
}
