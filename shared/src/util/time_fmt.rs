//! RFC 3339 timestamps for the API, from and to Unix milliseconds (the only
//! time representation the rest of the crate uses).

use chrono::{DateTime, SecondsFormat, Utc};

/// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z: the range RFC 3339's
/// four-digit years can write.
const MIN_MS: i64 = -62_167_219_200_000;
const MAX_MS: i64 = 253_402_300_799_999;

/// UTC with millisecond precision and a `Z`, e.g. `2025-01-01T00:00:00.000Z`.
/// Out-of-range instants (a saturated "never") are clamped to the ends of that range.
pub fn rfc3339(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms.clamp(MIN_MS, MAX_MS))
        .expect("clamped into chrono's range")
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Any RFC 3339 timestamp (any offset) as Unix ms; sub-millisecond digits are dropped.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_millis() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_445_412_480_123), "2015-10-21T07:28:00.123Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(i64::MAX), "9999-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(i64::MIN), "0000-01-01T00:00:00.000Z");
    }

    #[test]
    fn parses_offsets_and_fractions() {
        assert_eq!(
            parse_rfc3339("2015-10-21T07:28:00Z"),
            Some(1_445_412_480_000)
        );
        assert_eq!(
            parse_rfc3339("2015-10-21T09:28:00.5+02:00"),
            Some(1_445_412_480_500)
        );
        assert_eq!(
            parse_rfc3339("2015-10-21T07:28:00.123456789Z"),
            Some(1_445_412_480_123)
        );
        assert_eq!(
            parse_rfc3339("2015-10-21 07:28:00Z"),
            Some(1_445_412_480_000)
        );
        assert_eq!(parse_rfc3339("2015-10-21"), None);
        assert_eq!(parse_rfc3339("2015-10-21T07:28:00"), None);
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn round_trips() {
        for ms in [0, 1, 999, 1_700_000_000_000, MIN_MS, MAX_MS] {
            assert_eq!(parse_rfc3339(&rfc3339(ms)), Some(ms));
        }
    }
}
