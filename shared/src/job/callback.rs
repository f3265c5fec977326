//! Callbacks (docs/app-guide.md "Callbacks"): a job enqueued with a `callback` target has its
//! end delivered there once, signed like any delivery; a chain's first job, its chain's end. D1
//! writes the delivery itself, as a job of the built-in type `callback` (id: the job's id and
//! [`ID_SUFFIX`]), from a trigger on the job's status or chain status (migration
//! `0029_callbacks.sql`), so every path that ends a job calls back, and the callback's
//! retries are its own: they never touch the job's outcome.

use serde_json::Value;

use crate::job::payloads::{payload_object, FieldError};
use crate::job::target::Target;
use crate::request::api_error::ApiError;

/// A callback job's id is its job's id with this suffix (the trigger writes it so).
pub const ID_SUFFIX: &str = ".callback";

/// A `callback` job's payload fields: where it goes, and what it delivers.
const PAYLOAD_FIELDS: [&str; 4] = ["target", "event", "job", "chain"];

/// A job's `callback` at enqueue: a [`Target`], stored as given.
pub fn checked(callback: Option<&Value>) -> Result<Option<String>, ApiError> {
    let Some(callback) = callback else {
        return Ok(None);
    };
    Target::parse(callback, "callback")?;
    Ok(Some(callback.to_string()))
}

/// The registry's check of a `callback` job's payload (only D1 writes one).
pub fn check_payload(payload: &Value) -> Result<(), FieldError> {
    payload_object(payload, &PAYLOAD_FIELDS)?;
    let target = payload.get("target").unwrap_or(&Value::Null);
    Target::parse(target, "target")
        .map_err(|e| FieldError::new(e.field.unwrap_or_default(), e.message))?;
    Ok(())
}

/// A `callback` job's payload split: its target, and the body delivered (its payload less
/// the target: `event`, `job`, and for a chain `chain`).
pub fn parts(mut payload: Value) -> Result<(Target, Value), FieldError> {
    check_payload(&payload)?;
    let target = payload
        .as_object_mut()
        .and_then(|o| o.remove("target"))
        .unwrap_or_default();
    let target = Target::parse(&target, "target")
        .map_err(|e| FieldError::new(e.field.unwrap_or_default(), e.message))?;
    Ok((target, payload))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_callback_is_a_target_and_its_payload_splits_off_the_body() {
        assert_eq!(checked(None).unwrap(), None);
        let url = json!({"url": "https://app.example/done"});
        assert_eq!(
            checked(Some(&url)).unwrap().as_deref(),
            Some(r#"{"url":"https://app.example/done"}"#)
        );
        let e = checked(Some(&json!({"url": "nope"}))).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("callback.url"));
        let payload = json!({"target": url, "event": "job.ended", "job": {"id": "j"}});
        let (target, body) = parts(payload).unwrap();
        assert_eq!(target, Target::Url("https://app.example/done".into()));
        assert_eq!(body, json!({"event": "job.ended", "job": {"id": "j"}}));
        assert_eq!(
            check_payload(&json!({"target": url, "zzz": 1}))
                .unwrap_err()
                .field,
            "zzz"
        );
    }
}
