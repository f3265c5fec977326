//! Waiting for an event (docs/app-guide.md "Workflows"): a chain step of the built-in type
//! `wait` is due at its timeout, and resumes at once when the app posts its event with its key
//! (`POST /v1/events`, which writes the event's `data` into the wait's payload as `received`).
//! When it runs it ends as [`wait_end`] says: the event as its result, or, past its timeout,
//! dead or (with `on_timeout: continue`) a result that says it timed out. Read by hand (a
//! serde struct costs each Worker kilobytes of WASM: docs/performance.md).

use serde_json::{json, Map, Value};

use crate::job::payloads::{payload_object, FieldError};
use crate::job::stored_result::MAX_RESULT_BYTES;
use crate::request::api_error::ApiError;
use crate::request::field_error::{invalid, only_fields};

/// The longest event name, in characters.
pub const MAX_EVENT_CHARS: usize = 128;
/// The longest key, in characters.
pub const MAX_KEY_CHARS: usize = 256;
/// How long a wait waits when its payload names no `timeout_seconds`: a day.
pub const DEFAULT_TIMEOUT_SECS: i64 = 86_400;
/// The longest a wait may wait: a year, as far ahead as a job may be scheduled (enqueue's
/// `MAX_TIMEOUT_SECS`).
pub const MAX_TIMEOUT_SECS: i64 = 31_536_000;

/// The field the event's data is written to in the wait's payload (`POST /v1/events`).
pub const RECEIVED: &str = "received";

const FIELDS: [&str; 5] = ["event", "key", "timeout_seconds", "on_timeout", RECEIVED];

/// A `wait` job's payload.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitPayload<'a> {
    pub event: &'a str,
    pub key: &'a str,
    pub timeout_secs: i64,
    /// Past the timeout: fail the wait (and its chain), or go on.
    pub continue_on_timeout: bool,
    /// The event's data, once it came.
    pub received: Option<&'a Value>,
}

impl<'a> WaitPayload<'a> {
    /// The payload's fields, checked; errors name the field relative to the payload.
    pub fn parse(payload: &'a Value) -> Result<WaitPayload<'a>, FieldError> {
        let object = payload_object(payload, &FIELDS)?;
        let timeout_secs = match object.get("timeout_seconds").map(Value::as_i64) {
            None => DEFAULT_TIMEOUT_SECS,
            Some(Some(secs)) if (1..=MAX_TIMEOUT_SECS).contains(&secs) => secs,
            Some(_) => {
                let message = format!("must be a whole number from 1 to {MAX_TIMEOUT_SECS}");
                return Err(FieldError::new("timeout_seconds", message));
            }
        };
        let continue_on_timeout = match object.get("on_timeout").map(Value::as_str) {
            None | Some(Some("fail")) => false,
            Some(Some("continue")) => true,
            Some(_) => return Err(FieldError::new("on_timeout", "must be fail or continue")),
        };
        Ok(WaitPayload {
            event: text(object, "event", MAX_EVENT_CHARS)
                .map_err(|(f, m)| FieldError::new(f, m))?,
            key: text(object, "key", MAX_KEY_CHARS).map_err(|(f, m)| FieldError::new(f, m))?,
            timeout_secs,
            continue_on_timeout,
            received: object.get(RECEIVED),
        })
    }

    /// The registry's check of a `wait` payload.
    pub fn check(payload: &Value) -> Result<(), FieldError> {
        WaitPayload::parse(payload).map(drop)
    }
}

/// Field `name` of `object`: a string of 1 to `max` characters; `Err` is (field, message).
fn text<'a>(
    object: &'a Map<String, Value>,
    name: &str,
    max: usize,
) -> Result<&'a str, (String, String)> {
    match object.get(name).and_then(Value::as_str) {
        Some(text) if !text.is_empty() && text.chars().count() <= max => Ok(text),
        _ => Err((
            name.to_string(),
            format!("must be a string of 1 to {max} characters"),
        )),
    }
}

/// What a wait's run ends in: the event, as its result; or past its timeout with no event,
/// `Err` with why (the wait goes dead, its chain with it) unless it continues on timeout.
pub fn wait_end(wait: &WaitPayload) -> Result<Value, String> {
    let (event, key) = (wait.event, wait.key);
    match (wait.received, wait.continue_on_timeout) {
        (Some(data), _) => Ok(json!({ "event": event, "key": key, "data": data })),
        (None, true) => Ok(json!({ "event": event, "key": key, "timed_out": true })),
        (None, false) => Err(format!(
            "no {event} event for key {key} came within {} s",
            wait.timeout_secs
        )),
    }
}

/// A posted event (`POST /v1/events`): its name, key, and data as stored (compact JSON, at most
/// a stored result's size).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub event: String,
    pub key: String,
    pub data: String,
}

impl Event {
    /// The request body, checked; errors name the field.
    pub fn parse(body: &Value) -> Result<Event, ApiError> {
        only_fields(body, &["event", "key", "data"])?;
        let empty = Map::new();
        let object = body.as_object().unwrap_or(&empty);
        let field =
            |name, max| text(object, name, max).map_err(|(f, m)| invalid("invalid_field", f, m));
        let (event, key) = (
            field("event", MAX_EVENT_CHARS)?,
            field("key", MAX_KEY_CHARS)?,
        );
        let data = body.get("data").unwrap_or(&Value::Null).to_string();
        if data.len() > MAX_RESULT_BYTES {
            let message = format!("is {} bytes; at most {MAX_RESULT_BYTES}", data.len());
            return Err(ApiError::new(413, "data_too_large", message).with_field("data"));
        }
        Ok(Event {
            event: event.to_string(),
            key: key.to_string(),
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(payload: Value) -> Option<String> {
        WaitPayload::check(&payload).err().map(|e| e.field)
    }

    #[test]
    fn a_wait_names_its_event_and_key_and_may_bound_its_wait() {
        let wait = json!({"event": "approved", "key": "order-42"});
        let parsed = WaitPayload::parse(&wait).unwrap();
        assert_eq!(
            (parsed.timeout_secs, parsed.continue_on_timeout),
            (DEFAULT_TIMEOUT_SECS, false)
        );
        assert_eq!(field(json!({"key": "k"})).as_deref(), Some("event"));
        assert_eq!(
            field(json!({"event": "e", "key": ""})).as_deref(),
            Some("key")
        );
        let long = json!({"event": "e", "key": "k", "timeout_seconds": MAX_TIMEOUT_SECS + 1});
        assert_eq!(field(long).as_deref(), Some("timeout_seconds"));
        let bad = json!({"event": "e", "key": "k", "on_timeout": "retry"});
        assert_eq!(field(bad).as_deref(), Some("on_timeout"));
        assert_eq!(
            field(json!({"event": "e", "key": "k", "zzz": 1})).as_deref(),
            Some("zzz")
        );
    }

    #[test]
    fn a_wait_ends_with_its_event_or_its_timeout() {
        let came = json!({"event": "approved", "key": "k", "received": {"by": "ann"}});
        let result = wait_end(&WaitPayload::parse(&came).unwrap()).unwrap();
        assert_eq!(
            result,
            json!({"event": "approved", "key": "k", "data": {"by": "ann"}})
        );
        let null = json!({"event": "approved", "key": "k", "received": null});
        assert_eq!(
            wait_end(&WaitPayload::parse(&null).unwrap()).unwrap()["data"],
            Value::Null
        );
        let late = json!({"event": "approved", "key": "k", "timeout_seconds": 60});
        let why = wait_end(&WaitPayload::parse(&late).unwrap()).unwrap_err();
        assert_eq!(why, "no approved event for key k came within 60 s");
        let goes_on = json!({"event": "approved", "key": "k", "on_timeout": "continue"});
        let result = wait_end(&WaitPayload::parse(&goes_on).unwrap()).unwrap();
        assert_eq!(result["timed_out"], json!(true));
    }

    #[test]
    fn an_event_names_its_wait_and_bounds_its_data() {
        let event =
            Event::parse(&json!({"event": "approved", "key": "k", "data": {"a": 1}})).unwrap();
        assert_eq!(event.data, r#"{"a":1}"#);
        let no_data = Event::parse(&json!({"event": "approved", "key": "k"})).unwrap();
        assert_eq!(no_data.data, "null");
        let e = Event::parse(&json!({"event": "approved"})).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("key"));
        let e = Event::parse(&json!({"event": "a", "key": "k", "extra": 1})).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            ("unknown_field", Some("extra"))
        );
        let big = json!({"event": "a", "key": "k", "data": "x".repeat(MAX_RESULT_BYTES)});
        assert_eq!(Event::parse(&big).unwrap_err().status, 413);
    }
}
