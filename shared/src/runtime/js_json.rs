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

/// A JSON text a JS snippet handed over as UTF-8 bytes (`TextEncoder`: wasm-bindgen copies a
/// returned string in a character at a time), read as a `T`. Read through `str`, so the WASM
/// holds one copy of serde's reader, not a second for bytes.
pub fn from_json_bytes<T: DeserializeOwned>(bytes: Vec<u8>) -> Result<T, String> {
    let text = String::from_utf8(bytes).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

fn json_error(e: serde_json::Error) -> worker::Error {
    worker::Error::RustError(e.to_string())
}
