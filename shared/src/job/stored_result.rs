//! What of a handler's result D1 keeps, and how a batch of outcome rows is cut to fit D1.
//!
//! A result is whatever a remote server answered (an app endpoint, a feed, an LLM), so its size
//! is untrusted: it is capped before it reaches the record batch, and the cap is flagged on the
//! job instead of failing it (docs/guarantees.md "Guarantees and how they hold"). The record
//! batch binds its rows as JSON arrays; D1 refuses any string over 2 MB (`SQLITE_TOOBIG`), so rows
//! are grouped into arrays of at most [`MAX_ROWS_JSON_BYTES`] each, still within one round trip.

use std::ops::Range;

use serde_json::{json, Value};

use crate::util::text_prefix::byte_prefix;

/// The largest result stored on a job, as compact JSON (bytes).
pub const MAX_RESULT_BYTES: usize = 64 * 1024;

/// The largest response body a handler reads from a remote server (bytes); the rest is never
/// read. Below the stored cap, so that a cut body, escaped into its result, usually still fits
/// (one that does not is replaced by the truncation marker of [`stored_result`]).
pub const MAX_RESPONSE_BYTES: usize = 48 * 1024;

/// The largest JSON array of rows bound to one statement: half of D1's 2 MB string limit.
pub const MAX_ROWS_JSON_BYTES: usize = 1024 * 1024;

/// A result as stored: compact JSON of at most [`MAX_RESULT_BYTES`]. A larger one is replaced
/// by `{"truncated": true, "bytes": <its size>, "preview": "<its first bytes>"}`, so the job
/// says plainly that its result was cut and how large it was.
pub fn stored_result(result: &Value) -> String {
    stored_result_within(result, MAX_RESULT_BYTES)
}

/// [`stored_result`] at most `max` bytes (a type's `max_result_bytes`).
pub fn stored_result_within(result: &Value, max: usize) -> String {
    let text = result.to_string();
    if text.len() <= max {
        return text;
    }
    // The preview is escaped again inside the marker, which at most doubles it (every
    // character of JSON text that needs escaping there is a quote or a backslash).
    let preview = byte_prefix(&text, (max.min(MAX_RESULT_BYTES) - 128) / 2);
    json!({ "truncated": true, "bytes": text.len(), "preview": preview }).to_string()
}

/// Rows (each already JSON) grouped into JSON arrays of at most `max_bytes` each, with the
/// range of `rows` each holds; a row larger than `max_bytes` gets an array of its own (D1 then
/// refuses that one statement alone).
pub fn json_arrays(rows: &[String], max_bytes: usize) -> Vec<(Range<usize>, String)> {
    let mut arrays = Vec::new();
    let mut start = 0;
    let mut current = String::from("[");
    for (i, row) in rows.iter().enumerate() {
        if current.len() > 1 && current.len() + row.len() + 2 > max_bytes {
            current.push(']');
            arrays.push((start..i, std::mem::replace(&mut current, String::from("["))));
            start = i;
        }
        if current.len() > 1 {
            current.push(',');
        }
        current.push_str(row);
    }
    if current.len() > 1 {
        current.push(']');
        arrays.push((start..rows.len(), current));
    }
    arrays
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_results_are_stored_as_they_are() {
        let result = json!({"status": 200, "body": {"ok": true}});
        assert_eq!(stored_result(&result), result.to_string());
    }

    #[test]
    fn large_results_are_cut_and_flagged() {
        let result = json!({"status": 200, "body": "é".repeat(200_000)});
        let stored = stored_result(&result);
        assert!(stored.len() <= MAX_RESULT_BYTES, "{}", stored.len());
        let marker: Value = serde_json::from_str(&stored).unwrap();
        assert_eq!(marker["truncated"], true);
        assert_eq!(marker["bytes"], result.to_string().len());
        assert!(marker["preview"]
            .as_str()
            .unwrap()
            .starts_with("{\"body\":\"éé"));
    }

    #[test]
    fn a_preview_of_escapes_still_fits() {
        let result = json!({"body": "\"\\".repeat(40_000)});
        let stored = stored_result(&result);
        assert!(stored.len() <= MAX_RESULT_BYTES, "{}", stored.len());
        assert_eq!(
            serde_json::from_str::<Value>(&stored).unwrap()["truncated"],
            true
        );
    }

    #[test]
    fn rows_are_grouped_under_the_size() {
        let rows: Vec<String> = (0..10)
            .map(|i| format!("[\"{i}\",\"{}\"]", "x".repeat(40)))
            .collect();
        let arrays = json_arrays(&rows, 120);
        assert!(arrays.len() > 1);
        let mut all = Vec::new();
        for (range, array) in &arrays {
            assert!(array.len() <= 120, "{array}");
            let parsed: Vec<Value> = serde_json::from_str(array).unwrap();
            // Each array names the rows it holds.
            assert_eq!(range.start, all.len());
            assert_eq!(range.len(), parsed.len());
            all.extend(parsed);
        }
        assert_eq!(all.len(), 10);
        assert_eq!(all[3][0], "3");
        assert_eq!(json_arrays(&rows, usize::MAX).len(), 1);
        assert!(json_arrays(&[], 100).is_empty());
        // A row over the size stands alone.
        let big = vec![
            "[1]".to_string(),
            format!("[\"{}\"]", "y".repeat(300)),
            "[2]".to_string(),
        ];
        assert_eq!(json_arrays(&big, 100).len(), 3);
    }
}
