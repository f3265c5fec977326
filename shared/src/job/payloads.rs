//! One typed payload per built-in job type, checked at enqueue so a malformed job is
//! refused with the field to fix instead of failing on every attempt later.
//!
//! Every struct denies unknown fields (a typo must not be silently dropped), and
//! fields are optional unless a handler needs them.

use crate::request::field_error::{decode, join};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Display;
use std::ops::RangeInclusive;

pub use crate::request::field_error::FieldError;

/// A payload type plus the checks serde cannot express (ranges, formats).
pub(crate) trait Payload: DeserializeOwned {
    fn check(&self) -> Result<(), FieldError> {
        Ok(())
    }
}

/// Field name used when the payload as a whole is wrong.
pub const PAYLOAD_FIELD: &str = "payload";

/// Validates `payload` as a `P`; errors name the field relative to the payload.
pub(crate) fn validate<P: Payload>(payload: &Value) -> Result<(), FieldError> {
    if !payload.is_object() {
        return Err(FieldError::new(
            PAYLOAD_FIELD,
            "payload must be a JSON object",
        ));
    }
    decode::<P>(payload).map_err(|e| e.error)?.check()
}

/// A payload read by hand (a serde struct costs each Worker kilobytes of WASM): its object,
/// refused when it is not one or has a field not in `fields`.
pub(crate) fn payload_object<'a>(
    payload: &'a Value,
    fields: &[&str],
) -> Result<&'a serde_json::Map<String, Value>, FieldError> {
    let object = payload
        .as_object()
        .ok_or_else(|| FieldError::new(PAYLOAD_FIELD, "payload must be a JSON object"))?;
    match object.keys().find(|k| !fields.contains(&k.as_str())) {
        Some(key) => Err(FieldError::new(key.as_str(), "unknown field")),
        None => Ok(object),
    }
}

/// One source, or every source due when omitted (docs/app-guide.md "rss_feed_refresh").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RssFeedRefreshPayload {
    pub source_id: Option<String>,
    /// Bypass the source's refresh interval (manual refresh from the admin).
    pub force_refresh: Option<bool>,
}

impl Payload for RssFeedRefreshPayload {
    fn check(&self) -> Result<(), FieldError> {
        self.source_id
            .as_deref()
            .map_or(Ok(()), |id| check_uuid("source_id", id))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkHealthCheckPayload {
    /// Links to check; the whole directory when omitted (the weekly run).
    pub urls: Option<Vec<String>>,
    /// Links checked at once (default [`crate::handlers::link_health::DEFAULT_LINK_CONCURRENCY`]).
    pub concurrency: Option<u32>,
    /// Consecutive failures that make a link dead (default [`crate::handlers::link_health::DEFAULT_DEAD_AFTER`]).
    pub dead_after: Option<u32>,
}

impl Payload for LinkHealthCheckPayload {
    fn check(&self) -> Result<(), FieldError> {
        check_range("concurrency", self.concurrency, 1..=20)?;
        check_range("dead_after", self.dead_after, 1..=100)?;
        if self.urls.as_ref().is_some_and(|u| u.len() > 500) {
            return Err(FieldError::new("urls", "at most 500 links per job"));
        }
        each("urls", self.urls.as_deref(), |field, url| {
            check_url(field, url)
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AiTaggingTrigger {
    Scheduled,
    Manual,
}

/// Both fields are for telemetry only (docs/app-guide.md "AI tagging and budgets").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AiTaggingPayload {
    pub trigger: Option<AiTaggingTrigger>,
    pub untagged_count: Option<u32>,
}

impl Payload for AiTaggingPayload {}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Viewport {
    pub width: u32,
    pub height: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitUntil {
    Load,
    Networkidle,
    /// Wait for `selector` to appear.
    Selector,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    Png,
    Jpeg,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreenshotCapturePayload {
    pub url: String,
    pub viewport: Option<Viewport>,
    pub full_page: Option<bool>,
    pub wait_until: Option<WaitUntil>,
    pub selector: Option<String>,
    pub format: Option<ImageFormat>,
    pub timeout_ms: Option<u32>,
}

impl Payload for ScreenshotCapturePayload {
    fn check(&self) -> Result<(), FieldError> {
        check_url("url", &self.url)?;
        if let Some(v) = self.viewport {
            check_range("viewport.width", Some(v.width), 1..=MAX_VIEWPORT_SIDE)?;
            check_range("viewport.height", Some(v.height), 1..=MAX_VIEWPORT_SIDE)?;
        }
        check_range(
            "timeout_ms",
            self.timeout_ms,
            1_000..=MAX_PAYLOAD_TIMEOUT_MS,
        )?;
        check_non_empty("selector", self.selector.as_deref())?;
        if self.wait_until == Some(WaitUntil::Selector) && self.selector.is_none() {
            return Err(FieldError::new(
                "selector",
                "required when wait_until is \"selector\"",
            ));
        }
        Ok(())
    }
}

/// The built-in `http` type: one request to `url`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpPayload {
    pub url: String,
    /// One of [`HTTP_METHODS`]; see [`HttpPayload::method`] for the default.
    pub method: Option<String>,
    pub headers: Option<BTreeMap<String, String>>,
    /// Sent as is when a JSON string, otherwise serialized as JSON.
    pub body: Option<Value>,
    /// Overrides the type's timeout, up to [`MAX_PAYLOAD_TIMEOUT_MS`].
    pub timeout_ms: Option<u32>,
    /// Lets the target's answer create follow-up jobs (`{"follow_up": [...]}`). Off by default:
    /// a server we call is untrusted input, and only the enqueuer can vouch for it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_follow_ups: bool,
}

/// The longest a payload's own `timeout_ms` may be (`http`, `screenshot_capture`: the types whose
/// registry row says `payload_timeout`).
pub const MAX_PAYLOAD_TIMEOUT_MS: u32 = 120_000;

pub const HTTP_METHODS: [&str; 6] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"];

impl HttpPayload {
    /// The request method, POST when omitted: jobs usually deliver something.
    pub fn method(&self) -> &str {
        self.method.as_deref().unwrap_or("POST")
    }
}

impl Payload for HttpPayload {
    fn check(&self) -> Result<(), FieldError> {
        check_url("url", &self.url)?;
        if !HTTP_METHODS.contains(&self.method()) {
            let allowed = HTTP_METHODS.join(", ");
            return Err(FieldError::new(
                "method",
                format!("must be one of {allowed}"),
            ));
        }
        // fetch() refuses a body on these, which would fail every attempt.
        if matches!(self.method(), "GET" | "HEAD") && self.body.is_some() {
            return Err(FieldError::new("body", "not allowed with GET or HEAD"));
        }
        for (name, value) in self.headers.iter().flatten() {
            let field = join("headers", name);
            if name.is_empty() || !name.bytes().all(is_header_token_byte) {
                return Err(FieldError::new(field, "not a valid header name"));
            }
            if value.contains(['\r', '\n', '\0']) {
                return Err(FieldError::new(
                    field,
                    "header values cannot contain CR, LF or NUL",
                ));
            }
        }
        check_range("timeout_ms", self.timeout_ms, 100..=MAX_PAYLOAD_TIMEOUT_MS)
    }
}

/// Built-in no-op, for benchmarks and tests of the pipeline itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoopPayload {
    /// Fail this many attempts before succeeding (exercises retries).
    pub fail_times: Option<u32>,
}

impl Payload for NoopPayload {}

fn check_range<T: PartialOrd + Display>(
    field: &str,
    value: Option<T>,
    range: RangeInclusive<T>,
) -> Result<(), FieldError> {
    match value {
        Some(v) if !range.contains(&v) => Err(FieldError::new(
            field,
            format!("must be between {} and {}", range.start(), range.end()),
        )),
        _ => Ok(()),
    }
}

fn check_non_empty(field: &str, value: Option<&str>) -> Result<(), FieldError> {
    match value {
        Some(v) if v.trim().is_empty() => Err(FieldError::new(field, "must not be empty")),
        _ => Ok(()),
    }
}

/// Runs `check` on each item of a list field, naming items `field[i]`.
fn each(
    field: &str,
    items: Option<&[String]>,
    check: impl Fn(&str, &str) -> Result<(), FieldError>,
) -> Result<(), FieldError> {
    items
        .unwrap_or_default()
        .iter()
        .enumerate()
        .try_for_each(|(i, item)| check(&format!("{field}[{i}]"), item))
}

/// `8-4-4-4-12` hex digits, the textual UUID form.
fn check_uuid(field: &str, value: &str) -> Result<(), FieldError> {
    let groups: Vec<&str> = value.split('-').collect();
    let lengths: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    let hex = groups
        .iter()
        .all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()));
    if lengths == [8, 4, 4, 4, 12] && hex {
        Ok(())
    } else {
        Err(FieldError::new(field, "must be a UUID"))
    }
}

/// An `http://` or `https://` URL with a non-empty host and no whitespace.
/// Deliberately not a full parser: the `url` crate would add a lot to every
/// Worker's WASM, and this already catches the mistakes that matter here (a
/// wrong scheme, a missing host, a pasted space); fetch() rejects the rest.
pub(crate) fn check_url(field: &str, url: &str) -> Result<(), FieldError> {
    let authority = authority(url);
    let host = authority.map(|a| a.rsplit('@').next().unwrap_or_default());
    let has_host = host.is_some_and(|h| !h.is_empty() && !h.starts_with(':'));
    if !has_host || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(FieldError::new(
            field,
            "must be an http or https URL with a host",
        ));
    }
    if url.len() > MAX_URL_BYTES {
        let message = format!("must be at most {MAX_URL_BYTES} bytes long");
        return Err(FieldError::new(field, message));
    }
    // fetch() never sends a URL's credentials (nor does a browser keep them out of its
    // answer's URL), and a signature would cover a URL the app never sees (docs/app-guide.md
    // "Signed delivery").
    if authority.is_some_and(|a| a.contains('@')) {
        return Err(FieldError::new(
            field,
            "must not carry credentials (user:password@): they are not sent; put them in headers",
        ));
    }
    Ok(())
}

/// The longest URL a payload may name: longer ones are refused at enqueue rather than fail
/// every attempt where a store or a server draws its own line.
pub const MAX_URL_BYTES: usize = 8 * 1024;

/// The widest and tallest viewport a screenshot may ask for; a full-page capture is no wider.
pub const MAX_VIEWPORT_SIDE: u32 = 4096;

/// The authority of an `http://` or `https://` URL (`user@host:port`), or `None` for another
/// scheme.
fn authority(url: &str) -> Option<&str> {
    let rest = ["https://", "http://"].iter().find_map(|scheme| {
        let head = url.get(..scheme.len())?;
        head.eq_ignore_ascii_case(scheme)
            .then(|| &url[scheme.len()..])
    })?;
    rest.split(['/', '?', '#', '\\']).next()
}

/// RFC 9110 `tchar`.
fn is_header_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(field: &str) -> Result<(), String> {
        Err(field.to_string())
    }

    fn check<P: Payload>(payload: Value) -> Result<(), String> {
        validate::<P>(&payload).map_err(|e| e.field)
    }

    #[test]
    fn payload_must_be_an_object() {
        let e = validate::<NoopPayload>(&json!([1])).unwrap_err();
        assert_eq!(
            e,
            FieldError::new("payload", "payload must be a JSON object")
        );
        assert_eq!(check::<NoopPayload>(json!(null)), err("payload"));
    }

    #[test]
    fn rss_feed_refresh() {
        let ok =
            json!({"source_id": "123e4567-e89b-12d3-a456-426614174000", "force_refresh": true});
        assert_eq!(check::<RssFeedRefreshPayload>(ok), Ok(()));
        assert_eq!(check::<RssFeedRefreshPayload>(json!({})), Ok(()));
        assert_eq!(
            check::<RssFeedRefreshPayload>(
                json!({"source_id": "123e4567e89b12d3a456426614174000"})
            ),
            err("source_id")
        );
        assert_eq!(
            check::<RssFeedRefreshPayload>(
                json!({"source_id": "123e4567-e89b-12d3-a456-42661417400g"})
            ),
            err("source_id")
        );
        assert_eq!(
            check::<RssFeedRefreshPayload>(json!({"force_refresh": "yes"})),
            err("force_refresh")
        );
        assert_eq!(
            check::<RssFeedRefreshPayload>(json!({"sourceId": "x"})),
            err("sourceId")
        );
    }

    #[test]
    fn ai_tagging() {
        let ok = json!({"trigger": "manual", "untagged_count": 150});
        assert_eq!(check::<AiTaggingPayload>(ok), Ok(()));
        assert_eq!(
            check::<AiTaggingPayload>(json!({"trigger": "cron"})),
            err("trigger")
        );
        assert_eq!(
            check::<AiTaggingPayload>(json!({"untagged_count": -1})),
            err("untagged_count")
        );
    }

    #[test]
    fn screenshot_capture() {
        let ok = json!({
            "url": "https://example.com/a?b#c",
            "viewport": {"width": 1280, "height": 800},
            "full_page": true,
            "wait_until": "selector",
            "selector": "#main",
            "format": "jpeg",
            "timeout_ms": 30000
        });
        assert_eq!(check::<ScreenshotCapturePayload>(ok), Ok(()));
        let cases = [
            (json!({}), "url"),
            (json!({"url": "ftp://example.com"}), "url"),
            (json!({"url": "https://"}), "url"),
            (
                json!({"url": "https://example.com", "viewport": {"width": 0, "height": 1}}),
                "viewport.width",
            ),
            (
                json!({"url": "https://example.com", "viewport": {"width": 1, "height": 4097}}),
                "viewport.height",
            ),
            (
                json!({"url": "https://example.com", "viewport": {"width": 1}}),
                "viewport.height",
            ),
            (
                json!({"url": "https://example.com", "wait_until": "idle"}),
                "wait_until",
            ),
            (
                json!({"url": "https://example.com", "wait_until": "selector"}),
                "selector",
            ),
            (
                json!({"url": "https://example.com", "format": "gif"}),
                "format",
            ),
            (
                json!({"url": "https://example.com", "timeout_ms": 999}),
                "timeout_ms",
            ),
            (
                json!({"url": "https://example.com", "timeout_ms": 120001}),
                "timeout_ms",
            ),
        ];
        for (payload, field) in cases {
            assert_eq!(
                check::<ScreenshotCapturePayload>(payload.clone()),
                err(field),
                "{payload}"
            );
        }
    }

    #[test]
    fn http() {
        let ok = json!({
            "url": "http://api.example.com:8080/hook",
            "method": "PUT",
            "headers": {"x-foo": "bar", "Content-Type": "application/json"},
            "body": {"a": [1, 2]},
            "timeout_ms": 100
        });
        assert_eq!(check::<HttpPayload>(ok), Ok(()));
        assert_eq!(
            check::<HttpPayload>(json!({"url": "https://x.io", "body": "raw"})),
            Ok(())
        );
        let cases = [
            (json!({"url": "mailto:a@b.c"}), "url"),
            (json!({"url": "https://user:pw@x.io/hook"}), "url"),
            (json!({"url": "https://user@x.io"}), "url"),
            (json!({"url": "https://exa mple.com"}), "url"),
            (json!({"url": "https://:80/x"}), "url"),
            (json!({"url": "https://x.io", "method": "TRACE"}), "method"),
            (json!({"url": "https://x.io", "method": "get"}), "method"),
            (
                json!({"url": "https://x.io", "method": "GET", "body": "x"}),
                "body",
            ),
            (
                json!({"url": "https://x.io", "headers": {"x-foo": 1}}),
                "headers.x-foo",
            ),
            (
                json!({"url": "https://x.io", "headers": {"x foo": "1"}}),
                "headers.x foo",
            ),
            (
                json!({"url": "https://x.io", "headers": {"x-foo": "a\r\nb"}}),
                "headers.x-foo",
            ),
            (json!({"url": "https://x.io", "headers": []}), "headers"),
            (
                json!({"url": "https://x.io", "timeout_ms": 99}),
                "timeout_ms",
            ),
            (json!({"url": "https://x.io", "retries": 3}), "retries"),
        ];
        for (payload, field) in cases {
            assert_eq!(
                check::<HttpPayload>(payload.clone()),
                err(field),
                "{payload}"
            );
        }
    }

    #[test]
    fn http_method_defaults_to_post() {
        let p: HttpPayload = serde_json::from_value(json!({"url": "https://x.io"})).unwrap();
        assert_eq!(p.method(), "POST");
        assert_eq!(p.headers, None);
    }

    #[test]
    fn the_other_types() {
        assert_eq!(
            check::<LinkHealthCheckPayload>(json!({"urls": ["https://a.io"]})),
            Ok(())
        );
        assert_eq!(
            check::<LinkHealthCheckPayload>(json!({"urls": ["https://a.io", "a.io"]})),
            err("urls[1]")
        );
        assert_eq!(check::<NoopPayload>(json!({"fail_times": 2})), Ok(()));
        assert_eq!(
            check::<NoopPayload>(json!({"fail_times": "2"})),
            err("fail_times")
        );
    }

    #[test]
    fn url_check() {
        for ok in [
            "http://a",
            "HTTPS://A.IO",
            "https://a.io:8443/p?q=1",
            "http://[::1]:80/",
        ] {
            assert_eq!(check_url("u", ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "a.io",
            "https:/a.io",
            "https://",
            "https:///p",
            "https://u@/p",
            "https://a.io/\n",
        ] {
            assert!(check_url("u", bad).is_err(), "{bad}");
        }
        let long = format!("https://a.io/?q={}", "a".repeat(MAX_URL_BYTES));
        assert!(check_url("u", &long)
            .unwrap_err()
            .message
            .contains("at most 8192 bytes"));
        let shot = json!({"url": "https://user:secret@a.io/"});
        assert_eq!(check::<ScreenshotCapturePayload>(shot), err("url"));
    }
}
