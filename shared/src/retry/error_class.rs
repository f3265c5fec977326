//! Why an attempt failed, and whether trying again can help.

use serde::{Serialize, Serializer};
use std::fmt;

use crate::retry::retry_policy::MAX_RETRY_DELAY_SECS;
use crate::util::text_prefix::char_prefix;
use std::time::{Duration, UNIX_EPOCH};

/// The platform's classes; a built-in handler adds its own ([`ErrorClass::Handler`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    Timeout,
    RateLimited,
    ServerError,
    ClientError,
    Network,
    /// The platform lacks what it needs to run the type (e.g. no endpoint set).
    NotConfigured,
    InvalidPayload,
    /// A platform fault (D1, queue send): usually transient.
    Internal,
    /// The queue gave up redelivering (the message reached its DLQ).
    DeliveryExhausted,
    /// The attempt's lease ran out with no outcome recorded (its worker died): the sweep
    /// rescued the job.
    LeaseExpired,
    /// The platform's own limits, not the target: the invocation's subrequests were spent, or
    /// no connection came free before the job's deadline. Nothing was sent; retried.
    Capacity,
    /// The type's monthly budget is spent (docs/app-guide.md "AI tagging and budgets"): the job is
    /// `skipped`, not failed, and nothing retries it before the month rolls over.
    BudgetHardStop,
    /// The job's `expires_at` passed before it ran: skipped, never run (docs/app-guide.md
    /// "Lifecycle").
    Expired,
    /// An operator skipped the job while this attempt ran: the attempt's record ends there,
    /// and what it did after is not recorded (docs/app-guide.md "Lifecycle").
    Operator,
    /// A workflow's group failed fast: one of its branches ended without succeeding
    /// (docs/app-guide.md "Workflows").
    BranchFailed,
    /// A group's branch whose group no longer waits for it (failed fast, cancelled): skipped,
    /// not run.
    GroupEnded,
    /// A workflow's wait passed its timeout with no event (docs/app-guide.md "Workflows").
    WaitTimedOut,
    /// A failure only one built-in handler has, declared beside it (crate::handlers), so the
    /// platform's own classes name no handler's.
    Handler(&'static HandlerClass),
}

/// A built-in handler's own error class: its name in run records and logs, and whether trying
/// again can help.
#[derive(Debug, PartialEq, Eq)]
pub struct HandlerClass {
    pub name: &'static str,
    pub retryable: bool,
}

impl ErrorClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Timeout => "timeout",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::ServerError => "server_error",
            ErrorClass::ClientError => "client_error",
            ErrorClass::Network => "network",
            ErrorClass::NotConfigured => "not_configured",
            ErrorClass::InvalidPayload => "invalid_payload",
            ErrorClass::Internal => "internal",
            ErrorClass::DeliveryExhausted => "delivery_exhausted",
            ErrorClass::LeaseExpired => "lease_expired",
            ErrorClass::Capacity => "capacity",
            ErrorClass::BudgetHardStop => "budget_hard_stop",
            ErrorClass::Expired => "expired",
            ErrorClass::Operator => "operator",
            ErrorClass::BranchFailed => "branch_failed",
            ErrorClass::GroupEnded => "group_ended",
            ErrorClass::WaitTimedOut => "wait_timed_out",
            ErrorClass::Handler(class) => class.name,
        }
    }

    /// Transient faults are retried; errors that would fail the same way again
    /// go to `dead` at once instead of burning attempts.
    pub fn retryable(self) -> bool {
        match self {
            ErrorClass::Timeout
            | ErrorClass::RateLimited
            | ErrorClass::ServerError
            | ErrorClass::Network
            | ErrorClass::Internal
            | ErrorClass::LeaseExpired
            | ErrorClass::Capacity => true,
            ErrorClass::ClientError
            | ErrorClass::NotConfigured
            | ErrorClass::InvalidPayload
            | ErrorClass::DeliveryExhausted
            | ErrorClass::BudgetHardStop
            | ErrorClass::Expired
            | ErrorClass::Operator
            | ErrorClass::BranchFailed
            | ErrorClass::GroupEnded
            | ErrorClass::WaitTimedOut => false,
            ErrorClass::Handler(class) => class.retryable,
        }
    }

    /// The attempt decided not to do its work, deliberately: the job ends `skipped` (with
    /// this class as its reason) rather than `dead`.
    pub fn skips(self) -> bool {
        matches!(self, ErrorClass::BudgetHardStop | ErrorClass::GroupEnded)
    }
}

/// As its name, a built-in handler's class too.
impl Serialize for ErrorClass {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed attempt, as recorded in its run record.
#[derive(Clone, Debug, PartialEq)]
pub struct JobError {
    pub class: ErrorClass,
    pub message: String,
    /// The server's own wait (Retry-After), which overrides the backoff; never above
    /// [`MAX_RETRY_DELAY_SECS`].
    pub retry_after_secs: Option<u64>,
}

/// The most of a message an error keeps: messages carry remote text (a runtime's list of the
/// redirects a server sent, a parser's complaint), and each is stored on the job, its run
/// record and its log line.
pub const MAX_ERROR_MESSAGE_CHARS: usize = 1_000;

impl JobError {
    /// An error whose message is cut at MAX_ERROR_MESSAGE_CHARS.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        JobError {
            class,
            message: cut(message.into(), MAX_ERROR_MESSAGE_CHARS),
            retry_after_secs: None,
        }
    }

    /// A server's wait, cut to [`MAX_RETRY_DELAY_SECS`]: a remote answer (`Retry-After:
    /// 999999999`, a date years ahead) must not park a job for good.
    pub fn with_retry_after(mut self, secs: Option<u64>) -> Self {
        self.retry_after_secs = secs.map(|s| s.min(MAX_RETRY_DELAY_SECS));
        self
    }

    /// The same error told in other words (`message` gets the old ones), bounded as
    /// [`JobError::new`] bounds any: a prefix naming the caller may sit before a remote's text.
    pub fn reworded(self, message: impl FnOnce(&str) -> String) -> Self {
        let message = cut(message(&self.message), MAX_ERROR_MESSAGE_CHARS);
        JobError { message, ..self }
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class, self.message)
    }
}

impl std::error::Error for JobError {}

/// Outcome of an HTTP delivery by its status. 408, 429 and 5xx are transient
/// (and carry Retry-After when the server sent one); any other non-2xx would
/// fail the same way again.
pub fn classify_http_status(
    status: u16,
    retry_after: Option<&str>,
    now_ms: i64,
) -> Result<(), JobError> {
    let class = match status {
        200..=299 => return Ok(()),
        408 => ErrorClass::Timeout,
        429 => ErrorClass::RateLimited,
        500..=599 => ErrorClass::ServerError,
        _ => ErrorClass::ClientError,
    };
    let wait = if class.retryable() {
        retry_after.and_then(|v| parse_retry_after(v, now_ms))
    } else {
        None
    };
    Err(JobError::new(class, format!("HTTP {status}")).with_retry_after(wait))
}

/// The most of a redirect's `Location` an error message repeats: the target's answer is
/// untrusted, and the message is stored and shown.
const MAX_LOCATION_CHARS: usize = 200;

/// A redirect answered to a signed delivery. Not followed: the signature covers one URL, and
/// following would carry it (and the job's headers) to wherever the answer points. Final, like
/// any 4xx: the endpoint is configured wrong, and every retry would be answered the same.
pub fn delivery_redirected(status: u16, location: Option<&str>) -> JobError {
    let to = location.map_or(String::new(), |location| {
        format!(" to {}", cut(location.into(), MAX_LOCATION_CHARS))
    });
    JobError::new(
        ErrorClass::ClientError,
        format!(
            "HTTP {status}: a redirect{to}; deliveries do not follow redirects, so configure the final URL"
        ),
    )
}

/// `text`'s first `max` characters and `...` when it is longer.
fn cut(text: String, max: usize) -> String {
    let kept = char_prefix(&text, max);
    if kept.len() == text.len() {
        return text;
    }
    format!("{kept}...")
}

/// Seconds to wait from a `Retry-After` value: delta-seconds or an HTTP-date
/// (rounded up, so we never come back early). A date in the past is 0.
pub fn parse_retry_after(value: &str, now_ms: i64) -> Option<u64> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // All digits but too long for u64: saturate rather than ignore it.
        return Some(value.parse().unwrap_or(u64::MAX));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    let at_ms = at
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis();
    let now_ms = u128::try_from(now_ms).unwrap_or(0);
    let wait_secs = at_ms.saturating_sub(now_ms).div_ceil(1000);
    Some(u64::try_from(wait_secs).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2015-10-21T07:28:00Z, the date in RFC 9110's Retry-After example.
    const RFC_DATE_MS: i64 = 1_445_412_480_000;
    const RFC_DATE: &str = "Wed, 21 Oct 2015 07:28:00 GMT";

    #[test]
    fn a_redirected_delivery_is_final_and_names_a_bounded_location() {
        let e = delivery_redirected(301, Some("https://app.example.com/new"));
        assert_eq!(e.class, ErrorClass::ClientError);
        assert!(!e.class.retryable());
        assert!(
            e.message
                .starts_with("HTTP 301: a redirect to https://app.example.com/new;"),
            "{}",
            e.message
        );
        let long = format!("https://x.io/{}", "é".repeat(500));
        let e = delivery_redirected(302, Some(&long));
        assert!(e.message.chars().count() < 300, "{}", e.message);
        assert!(delivery_redirected(307, None)
            .message
            .starts_with("HTTP 307: a redirect;"));
    }

    #[test]
    fn an_error_keeps_a_bounded_message() {
        let short = JobError::new(ErrorClass::Network, "request failed");
        assert_eq!(short.message, "request failed");
        let long = JobError::new(ErrorClass::Network, "ü".repeat(5_000));
        assert_eq!(long.message.chars().count(), MAX_ERROR_MESSAGE_CHARS + 3);
        assert!(long.message.ends_with("ü..."));
        let told = (JobError::new(ErrorClass::RateLimited, "HTTP 429").with_retry_after(Some(9)))
            .reworded(|m| format!("{}: {m}", "x".repeat(5_000)));
        assert_eq!(told.message.chars().count(), MAX_ERROR_MESSAGE_CHARS + 3);
        assert_eq!(
            (told.class, told.retry_after_secs),
            (ErrorClass::RateLimited, Some(9))
        );
    }

    #[test]
    fn classify_http_status_table() {
        let now = RFC_DATE_MS - 120_000;
        let err = |class, msg: &str, wait| Err(JobError::new(class, msg).with_retry_after(wait));
        let cap = Some(MAX_RETRY_DELAY_SECS);
        let cases: [(u16, Option<&str>, Result<(), JobError>); 15] = [
            (200, None, Ok(())),
            (204, None, Ok(())),
            (
                301,
                Some("5"),
                err(ErrorClass::ClientError, "HTTP 301", None),
            ),
            (400, None, err(ErrorClass::ClientError, "HTTP 400", None)),
            (404, None, err(ErrorClass::ClientError, "HTTP 404", None)),
            (408, None, err(ErrorClass::Timeout, "HTTP 408", None)),
            (
                429,
                Some("7"),
                err(ErrorClass::RateLimited, "HTTP 429", Some(7)),
            ),
            (
                429,
                Some(RFC_DATE),
                err(ErrorClass::RateLimited, "HTTP 429", Some(120)),
            ),
            (
                429,
                Some("soon"),
                err(ErrorClass::RateLimited, "HTTP 429", None),
            ),
            (500, None, err(ErrorClass::ServerError, "HTTP 500", None)),
            (
                503,
                Some("30"),
                err(ErrorClass::ServerError, "HTTP 503", Some(30)),
            ),
            (503, None, err(ErrorClass::ServerError, "HTTP 503", None)),
            // Waits past the cap (30 h) are cut to it, as seconds or as a date.
            (
                503,
                Some("999999999"),
                err(ErrorClass::ServerError, "HTTP 503", cap),
            ),
            (
                429,
                Some("Fri, 31 Dec 9999 23:59:59 GMT"),
                err(ErrorClass::RateLimited, "HTTP 429", cap),
            ),
            (
                503,
                Some("108001"),
                err(ErrorClass::ServerError, "HTTP 503", cap),
            ),
        ];
        for (status, retry_after, expected) in cases {
            assert_eq!(
                classify_http_status(status, retry_after, now),
                expected,
                "{status}"
            );
        }
    }

    #[test]
    fn retryable_classes() {
        use ErrorClass as C;
        const PAGE_GONE: HandlerClass = HandlerClass {
            name: "page_gone",
            retryable: false,
        };
        let transient = [
            C::Timeout,
            C::RateLimited,
            C::ServerError,
            C::Network,
            C::Internal,
        ];
        let platform = [C::LeaseExpired, C::Capacity];
        let same_again = [
            C::ClientError,
            C::NotConfigured,
            C::InvalidPayload,
            C::Handler(&PAGE_GONE),
        ];
        assert!(C::BudgetHardStop.skips() && !C::BudgetHardStop.retryable());
        assert!(!same_again.into_iter().any(|c| c.skips()));
        let retried = transient.into_iter().chain(platform).map(|c| (c, true));
        let not_retried = same_again.into_iter().map(|c| (c, false));
        for (class, retryable) in retried
            .chain(not_retried)
            .chain([(C::DeliveryExhausted, false), (C::Expired, false)])
        {
            assert_eq!(class.retryable(), retryable, "{class}");
            assert_eq!(
                serde_json::to_value(class).unwrap(),
                serde_json::json!(class.as_str())
            );
        }
    }

    #[test]
    fn retry_after_values() {
        assert_eq!(parse_retry_after("0", 0), Some(0));
        assert_eq!(parse_retry_after(" 120 ", 0), Some(120));
        assert_eq!(
            parse_retry_after("99999999999999999999999", 0),
            Some(u64::MAX)
        );
        assert_eq!(parse_retry_after("-5", 0), None);
        assert_eq!(parse_retry_after("1.5", 0), None);
        assert_eq!(parse_retry_after("", 0), None);
        assert_eq!(parse_retry_after(RFC_DATE, RFC_DATE_MS - 60_000), Some(60));
        assert_eq!(parse_retry_after(RFC_DATE, RFC_DATE_MS - 59_001), Some(60));
        assert_eq!(parse_retry_after(RFC_DATE, RFC_DATE_MS + 5_000), Some(0));
        // The obsolete forms HTTP still allows.
        assert_eq!(
            parse_retry_after("Wednesday, 21-Oct-15 07:28:00 GMT", RFC_DATE_MS),
            Some(0)
        );
        assert_eq!(
            parse_retry_after("Wed Oct 21 07:28:00 2015", RFC_DATE_MS - 1_000),
            Some(1)
        );
    }

    #[test]
    fn job_error_display() {
        let e = JobError::new(ErrorClass::Network, "connection reset");
        assert_eq!(e.to_string(), "network: connection reset");
        assert_eq!(e.retry_after_secs, None);
    }
}
