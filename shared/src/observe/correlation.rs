//! Correlation ids: one id follows a job from the enqueue request through its queue message,
//! its D1 row, every log line and every request it makes. It is taken from the caller's W3C
//! `traceparent` (the trace id, so the job joins the caller's trace) or `X-Request-Id`, and
//! minted when neither is usable.

/// Longest `X-Request-Id` kept; anything longer (or with other characters) is replaced.
const MAX_REQUEST_ID: usize = 128;

/// The trace id of a valid W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`), lowercase.
/// Version `ff` and all-zero ids are invalid by the spec; later versions may append fields.
pub fn trace_id(traceparent: &str) -> Option<String> {
    let mut parts = traceparent.trim().split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
    let zero = |s: &str| s.bytes().all(|b| b == b'0');
    let valid = hex(version, 2)
        && !version.eq_ignore_ascii_case("ff")
        && (version != "00" || parts.next().is_none())
        && hex(trace, 32)
        && !zero(trace)
        && hex(span, 16)
        && !zero(span)
        && hex(flags, 2);
    valid.then(|| trace.to_ascii_lowercase())
}

/// The correlation id for a request: the traceparent's trace id, else a well-formed
/// `X-Request-Id` (1-128 of `A-Z a-z 0-9 . _ : -`), else `None` (the caller mints one).
pub fn from_headers(traceparent: Option<&str>, request_id: Option<&str>) -> Option<String> {
    if let Some(trace) = traceparent.and_then(trace_id) {
        return Some(trace);
    }
    let id = request_id?.trim();
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-');
    (!id.is_empty() && id.len() <= MAX_REQUEST_ID && id.chars().all(allowed))
        .then(|| id.to_string())
}

/// A fresh id from 16 random bytes: 32 lowercase hex digits, a valid W3C trace id, so the job's
/// outgoing requests can start a trace with it.
pub fn mint(random: [u8; 16]) -> String {
    let mut bytes = random;
    if bytes.iter().all(|b| *b == 0) {
        bytes[15] = 1; // all-zero is not a valid trace id
    }
    hex::encode(bytes)
}

/// The `traceparent` a job's outgoing request carries: the job's trace (when its correlation id
/// is a trace id) and a new span id for this request, sampled.
pub fn outgoing_traceparent(correlation_id: &str, span: [u8; 8]) -> Option<String> {
    let trace = trace_id(&format!("00-{correlation_id}-0000000000000001-01"))?;
    let mut span = span;
    if span.iter().all(|b| *b == 0) {
        span[7] = 1;
    }
    Some(format!("00-{trace}-{}-01", hex::encode(span)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn takes_the_trace_id_of_a_valid_traceparent() {
        assert_eq!(
            trace_id(TP).as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        assert_eq!(
            trace_id(&TP.to_uppercase()).as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        // A later version may carry more fields.
        assert!(trace_id("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz").is_some());
    }

    #[test]
    fn rejects_malformed_traceparents() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-zbf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(trace_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn traceparent_wins_then_request_id_then_nothing() {
        assert_eq!(
            from_headers(Some(TP), Some("req-1")).as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        assert_eq!(
            from_headers(Some("junk"), Some(" req-1 ")).as_deref(),
            Some("req-1")
        );
        assert_eq!(from_headers(None, Some("a b")), None);
        assert_eq!(from_headers(None, Some(&"x".repeat(129))), None);
        assert_eq!(from_headers(None, Some("")), None);
        assert_eq!(from_headers(None, None), None);
    }

    #[test]
    fn minted_ids_are_trace_ids() {
        let id = mint([7; 16]);
        assert_eq!(id, "07".repeat(16));
        assert!(trace_id(&format!("00-{id}-00f067aa0ba902b7-01")).is_some());
        assert_eq!(mint([0; 16]), format!("{}01", "0".repeat(30)));
    }

    #[test]
    fn outgoing_traceparent_only_for_trace_ids() {
        let tp = outgoing_traceparent("4bf92f3577b34da6a3ce929d0e0e4736", [1; 8]).unwrap();
        assert_eq!(
            tp,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0101010101010101-01"
        );
        assert_eq!(outgoing_traceparent("req-1", [1; 8]), None);
    }
}
