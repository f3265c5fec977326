//! What every table module shares: values as D1 binds them, and a round trip counted in
//! `D1Stats` (the benchmark and the Server-Timing header read those counts).

use jobs_shared::api::job_filter::SqlValue;
use jobs_shared::observe::d1_stats::D1Stats;
use jobs_shared::runtime::js_json::{from_js, from_json_bytes};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use worker::js_sys::{Array, Reflect};
use worker::wasm_bindgen_futures::JsFuture;
use worker::worker_sys::D1Database as D1DatabaseSys;
use worker::{D1Database, D1PreparedStatement, D1ResultMeta};

/// One statement's result in a counted round trip (the hot paths: enqueue and the consumer's
/// batches). Its rows cross from JS into Rust as one JSON text that
/// serde_json reads, not field by field (each field a call across the boundary and a string
/// decoded): at a hundred rows of a dozen columns, most of what reading them costs.
pub struct StatementResult(JsValue);

impl StatementResult {
    /// The rows, each as a `T`.
    pub fn results<T: DeserializeOwned>(&self) -> worker::Result<Vec<T>> {
        Ok(self.field("results")?.unwrap_or_default())
    }

    /// The rows of a statement that returns each as one JSON text column `j` (`packed!`:
    /// `json_array(...) AS j`), each read as a `T` from that array, in its fields' order. The hot
    /// paths' many-column rows cross this way: a value costs at every hop from SQLite into Rust
    /// (D1's rows, its answer, its objects, their JSON), and a row packed into one is about a
    /// sixth of a claim's round trip cheaper (docs/performance.md "Benchmark").
    pub fn packed_results<T: DeserializeOwned>(&self) -> worker::Result<Vec<T>> {
        let results = Reflect::get(&self.0, &"results".into())?;
        from_json_bytes(packed_rows(&results)).map_err(worker::Error::RustError)
    }

    /// What D1 says it did (rows read and written, its time).
    pub fn meta(&self) -> worker::Result<Option<D1ResultMeta>> {
        self.field("meta")
    }

    /// One field of the result (None when absent), read as one JSON text (runtime::js_json).
    fn field<T: DeserializeOwned>(&self, name: &str) -> worker::Result<Option<T>> {
        let value = Reflect::get(&self.0, &name.into())?;
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        from_js(&value).map(Some)
    }
}

#[wasm_bindgen(module = "/src/packed_rows.js")]
extern "C" {
    /// `[row.j, ...]` of a statement's rows, as one JSON text's UTF-8 bytes.
    #[wasm_bindgen(js_name = packedRows)]
    fn packed_rows(results: &JsValue) -> Vec<u8>;
}

/// A failed batch's error: D1's own (message "D1_...") with its cause, as `worker` words it.
fn d1_error(e: JsValue) -> worker::Error {
    match e.dyn_ref::<worker::js_sys::Error>() {
        Some(err) if String::from(err.message()).starts_with("D1") => {
            let cause = err.cause();
            let cause = cause.as_string().or_else(|| {
                cause
                    .dyn_ref::<worker::js_sys::Error>()
                    .map(|c| String::from(c.message()))
            });
            worker::Error::RustError(format!(
                "D1: {}",
                cause.unwrap_or_else(|| err.message().into())
            ))
        }
        _ => e.into(),
    }
}

/// One D1 round trip: the statements in one batch (one transaction), their results in order.
async fn batch(
    db: &D1Database,
    statements: Vec<D1PreparedStatement>,
) -> worker::Result<Vec<StatementResult>> {
    let list: Array = statements
        .iter()
        .map(|s| JsValue::from(s.inner().clone()))
        .collect();
    let db: &D1DatabaseSys = db.unchecked_ref();
    let results: Array = JsFuture::from(db.batch(list)?)
        .await
        .map_err(d1_error)?
        .dyn_into()?;
    Ok(results.iter().map(StatementResult).collect())
}

/// An integer as the JS number D1 binds (job fields stay far below 2^53).
pub fn num(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

pub fn opt_str(s: Option<&str>) -> JsValue {
    s.map_or(JsValue::NULL, JsValue::from_str)
}

/// `value` as one JSON text parameter, for `json_each(?)`.
pub fn json<T: Serialize + ?Sized>(value: &T) -> JsValue {
    JsValue::from_str(&json_text(value))
}

/// `value` as JSON text, for a checked statement's `json_each(?)` parameter.
pub fn json_text<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
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
) -> worker::Result<Vec<StatementResult>> {
    let results = batch(db, statements).await?;
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
