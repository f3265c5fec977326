//! Errors that name the offending field, so an API client can point at the exact
//! input to fix ("payload.viewport.width") instead of parsing prose.

use crate::request::api_error::ApiError;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A rejected input field: `field` is a path such as `url`, `headers.x-foo`,
/// `urls[2]` or `viewport.width`, relative to the value that was checked.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Why [`decode`] refused a value. Unknown fields are told apart because the
/// enqueue API gives them their own error code.
pub(crate) struct Undecodable {
    pub error: FieldError,
    pub unknown_field: bool,
}

/// Deserializes `value` into `T`, tracking the path to the first bad field.
pub(crate) fn decode<T: DeserializeOwned>(value: &Value) -> Result<T, Undecodable> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let message = err.inner().to_string();
        let path = err.path().to_string();
        let parent = if path == "." { "" } else { path.as_str() };
        // serde reports a missing field at its parent's path; the name is only in
        // the message ("missing field `url`"), so lift it into the path.
        let field = match backquoted_after(&message, "missing field `") {
            Some(name) => join(parent, name),
            None => parent.to_string(),
        };
        Undecodable {
            unknown_field: message.starts_with("unknown field `"),
            error: FieldError::new(field, in_json_terms(&message)),
        }
    })
}

/// serde's message with what it expected said in JSON's terms rather than Rust's ("expected
/// i64" is "expected an integer"): the caller wrote JSON.
fn in_json_terms(message: &str) -> String {
    let Some((found, expected)) = message.rsplit_once(", expected ") else {
        return message.to_string();
    };
    // serde reads a struct from an array too (by position), and then only counts its items.
    if expected.starts_with("struct ") && found.starts_with("invalid length ") {
        return "invalid type: array, expected an object".to_string();
    }
    // With its range where serde checks one, so an out-of-range value is told what fits.
    let expected = match expected {
        "i8" | "i16" | "i32" | "i64" | "isize" => "an integer",
        "u8" => "an integer from 0 to 255",
        "u16" => "an integer from 0 to 65535",
        "u32" => "an integer from 0 to 4294967295",
        "u64" | "usize" => "a non-negative integer",
        "f32" | "f64" => "a number",
        "a sequence" => "an array",
        "a map" => "an object",
        other if other.starts_with("struct ") => "an object",
        other => other,
    };
    let found = match found {
        "invalid type: map" => "invalid type: object",
        "invalid type: sequence" => "invalid type: array",
        other => other,
    };
    format!("{found}, expected {expected}")
}

/// `a` + `b` as a field path: `a.b`, or just the non-empty one.
pub(crate) fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ if b.starts_with('[') => format!("{a}{b}"),
        _ => format!("{a}.{b}"),
    }
}

fn backquoted_after<'m>(message: &'m str, prefix: &str) -> Option<&'m str> {
    let rest = message.strip_prefix(prefix)?;
    rest.split('`').next()
}

/// A missing payload is `{}`.
pub(crate) fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// Deserializes a request object; a bad or unknown field is a 422 naming it.
pub(crate) fn decode_fields<T: serde::de::DeserializeOwned>(body: &Value) -> Result<T, ApiError> {
    decode(body).map_err(|e| {
        let code = if e.unknown_field {
            "unknown_field"
        } else {
            "invalid_field"
        };
        invalid(code, e.error.field, e.error.message)
    })
}

pub(crate) fn not_an_object() -> ApiError {
    ApiError::new(400, "invalid_body", "request body must be a JSON object")
}

/// A 422 naming `field`.
pub(crate) fn invalid(
    code: &'static str,
    field: impl Into<String>,
    message: impl Into<String>,
) -> ApiError {
    ApiError::new(422, code, message).with_field(field)
}

/// Rejects fields other than `allowed`, so a typo cannot pass silently.
pub fn only_fields(body: &Value, allowed: &[&str]) -> Result<(), ApiError> {
    let object = body
        .as_object()
        .ok_or_else(|| ApiError::new(400, "invalid_body", "the body must be a JSON object"))?;
    match object.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(ApiError::new(
            422,
            "unknown_field",
            format!("unknown field {key:?}; allowed: {}", allowed.join(", ")),
        )
        .with_field(key.as_str())),
        None => Ok(()),
    }
}

/// The object at field `at` of a definition, its fields read by hand with [`int_field`]:
/// a field not `allowed` is a 422 `unknown_field` naming it (`flow.burst`). Read by hand rather
/// than through a serde struct, which costs each Worker kilobytes of WASM per struct.
pub(crate) fn object_at<'v>(
    value: &'v Value,
    at: &str,
    allowed: &[&str],
) -> Result<&'v serde_json::Map<String, Value>, ApiError> {
    let object = value
        .as_object()
        .ok_or_else(|| invalid("invalid_field", at, "must be an object"))?;
    match object.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => {
            let message = format!("unknown field {key:?}; allowed: {}", allowed.join(", "));
            Err(invalid("unknown_field", join(at, key), message))
        }
        None => Ok(object),
    }
}

/// Field `name` of `object` (at `at`): a whole number in `range`, if given.
pub(crate) fn int_field(
    object: &serde_json::Map<String, Value>,
    at: &str,
    name: &str,
    range: std::ops::RangeInclusive<i64>,
) -> Result<Option<i64>, ApiError> {
    let Some(value) = object.get(name) else {
        return Ok(None);
    };
    let (lo, hi) = (range.start(), range.end());
    match value.as_i64() {
        Some(n) if range.contains(&n) => Ok(Some(n)),
        Some(_) => Err(invalid(
            "out_of_range",
            join(at, name),
            format!("must be {lo} to {hi}"),
        )),
        None => Err(invalid(
            "invalid_field",
            join(at, name),
            "must be a whole number",
        )),
    }
}

/// A whole-number query parameter `name` from 1 to `max`, `default` when absent.
pub fn count_param(
    name: &str,
    value: Option<&str>,
    default: u32,
    max: u32,
) -> Result<u32, ApiError> {
    match value {
        None => Ok(default),
        Some(v) => v
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| {
                ApiError::new(422, "out_of_range", format!("{name} must be 1 to {max}"))
                    .with_field(name)
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        #[allow(dead_code)]
        width: u32,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        #[allow(dead_code)]
        url: String,
        #[allow(dead_code)]
        inner: Option<Inner>,
        #[allow(dead_code)]
        list: Option<Vec<u32>>,
    }

    fn reject(value: Value) -> (String, bool) {
        let err = decode::<Outer>(&value).unwrap_err();
        (err.error.field, err.unknown_field)
    }

    #[test]
    fn names_the_offending_field() {
        assert_eq!(reject(json!({})), ("url".into(), false));
        assert_eq!(reject(json!({"url": 1})), ("url".into(), false));
        assert_eq!(reject(json!({"url": "u", "x": 1})), ("x".into(), true));
        assert_eq!(
            reject(json!({"url": "u", "inner": {"width": "w"}})),
            ("inner.width".into(), false)
        );
        assert_eq!(
            reject(json!({"url": "u", "inner": {}})),
            ("inner.width".into(), false)
        );
        assert_eq!(
            reject(json!({"url": "u", "list": [1, "2"]})),
            ("list[1]".into(), false)
        );
    }

    #[test]
    fn says_what_it_expected_in_json_terms() {
        let message = |value: Value| decode::<Outer>(&value).unwrap_err().error.message;
        let width = |w: Value| message(json!({"url": "u", "inner": {"width": w}}));
        assert_eq!(
            width(json!(50.5)),
            "invalid type: floating point `50.5`, expected an integer from 0 to 4294967295"
        );
        assert_eq!(
            width(json!(5_000_000_000u64)),
            "invalid value: integer `5000000000`, expected an integer from 0 to 4294967295"
        );
        assert_eq!(
            message(json!({"url": "u", "inner": []})),
            "invalid type: array, expected an object"
        );
        assert_eq!(
            message(json!({"url": "u", "inner": "x"})),
            "invalid type: string \"x\", expected an object"
        );
        assert_eq!(
            message(json!({"url": "u", "list": {}})),
            "invalid type: object, expected an array"
        );
        assert_eq!(message(json!({})), "missing field `url`");
    }

    #[test]
    fn join_builds_paths() {
        assert_eq!(join("", "url"), "url");
        assert_eq!(join("payload", ""), "payload");
        assert_eq!(join("payload", "url"), "payload.url");
        assert_eq!(join("jobs", "[3]"), "jobs[3]");
    }

    #[test]
    fn unknown_fields_are_named() {
        assert!(only_fields(&json!({"by": 1}), &["by"]).is_ok());
        let e = only_fields(&json!({"by": 1, "bye": 2}), &["by"]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("bye"));
        assert_eq!(only_fields(&json!([]), &[]).unwrap_err().status, 400);
    }
}
