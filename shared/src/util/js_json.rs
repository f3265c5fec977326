//! Values across the WASM <-> JS boundary as one JSON text each way (feature `workers`): a
//! batch's hundred rows, messages or data points cost one call and one string, where
//! `serde-wasm-bindgen` makes a call (and decodes a string) per field of each.

use serde::de::DeserializeOwned;
use serde::Serialize;
use worker::js_sys::{Array, JSON};
use worker::wasm_bindgen::{JsCast, JsValue};

/// `items` as a JS array, built by one `JSON.parse`.
pub fn to_js_array<T: Serialize>(items: &[T]) -> worker::Result<Array> {
    let text = serde_json::to_string(items).map_err(json_error)?;
    Ok(JSON::parse(&text)?.dyn_into()?)
}

/// A JS value read into Rust from its `JSON.stringify` text.
pub fn from_js<T: DeserializeOwned>(value: &JsValue) -> worker::Result<T> {
    let text = JSON::stringify(value)?.as_string().unwrap_or_default();
    serde_json::from_str(&text).map_err(json_error)
}

fn json_error(e: serde_json::Error) -> worker::Error {
    worker::Error::RustError(e.to_string())
}
