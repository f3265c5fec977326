//! Cron expressions for recurring jobs: parsing (so a bad one is refused when a schedule is
//! written, never at tick time) and next-run computation in the schedule's time zone.
//!
//! Syntax: standard 5-field cron (`minute hour day-of-month month day-of-week`: lists, ranges,
//! steps, `JAN`-`DEC`, `SUN`-`SAT`), an optional `CRON_TZ=<IANA zone>` prefix (UTC otherwise),
//! `@yearly @annually @monthly @weekly @daily @hourly`, several expressions joined by `;` whose
//! union is the schedule (e.g. market hours that start at 09:30), and `@every <duration>` with
//! the units `ns us µs ms s m h d`, combined like `1h30m`.
//!
//! Field matching is croner's. Across DST, a single time (one minute of one hour) in the skipped
//! hour runs at the first instant after the gap, listed or stepped times in it do not run that
//! day (croner's), and a time in the repeated hour runs once, at its first occurrence, unless the
//! hour is a wildcard ([`next_of`]).

use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::Timestamp;

use crate::schedule::time_zones::TimeZones;

/// The sweep runs once a minute: a shorter `@every` could not be honoured.
pub const MIN_EVERY_MS: i64 = 60_000;

/// Where the "does it ever fire" check starts (2025-01-01): the shared crate has no clock,
/// and any start finds the next run of a pattern that has one.
const NEVER_CHECK_FROM_MS: i64 = 1_735_689_600_000;

/// Catch-up counts at most this many missed runs (the count is for the record only).
const MAX_COUNTED_MISSES: u32 = 10_000;

#[derive(Clone, Debug)]
pub struct CronSchedule {
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    /// Wall-clock times in `tz`: the union of the expressions.
    Calendar { tz: TimeZone, crons: Vec<Cron> },
    /// A fixed interval from the previous due time.
    Every { interval_ms: i64 },
}

/// What a due schedule does now: run once, record the runs a downtime swallowed, and wait
/// for `next_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatchUp {
    pub next_ms: i64,
    pub missed: u32,
}

impl CronSchedule {
    /// Parses an expression; the error says what is wrong with it. `zones` is the time-zone
    /// database, which an expression that names a zone needs ([`names_zone`]).
    pub fn parse(expression: &str, zones: Option<&TimeZones>) -> Result<CronSchedule, String> {
        let expression = expression.trim();
        let (tz, body) = split_time_zone(expression, zones)?;
        if body.is_empty() {
            return Err("the expression is empty".to_string());
        }
        if let Some(duration) = strip_prefix_ignore_case(body, "@every") {
            if tz.is_some() {
                return Err(
                    "@every takes no time zone: an interval is the same in every zone".into(),
                );
            }
            let interval_ms = parse_every(duration.trim())?;
            return Ok(CronSchedule {
                kind: Kind::Every { interval_ms },
            });
        }
        let crons = body
            .split(';')
            .map(|part| parse_calendar(part.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        let schedule = CronSchedule {
            kind: Kind::Calendar {
                tz: tz.unwrap_or(TimeZone::UTC),
                crons,
            },
        };
        // An expression like `0 0 30 2 *` parses but never fires: refuse it now.
        if schedule.next_after(NEVER_CHECK_FROM_MS).is_none() {
            return Err("the expression never matches a real date".to_string());
        }
        Ok(schedule)
    }

    /// The first run strictly after `after_ms` (for `@every`: one interval later).
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        match &self.kind {
            Kind::Every { interval_ms } => after_ms.checked_add(*interval_ms),
            Kind::Calendar { tz, crons } => crons
                .iter()
                .filter_map(|cron| next_of(cron, tz, after_ms))
                .min(),
        }
    }

    /// A schedule due at `due_ms`, seen at `now_ms` (>= due): it runs once now, whatever it
    /// missed meanwhile, and its next run is the first one after `now_ms` (for `@every`, on
    /// the grid of the original due time).
    pub fn catch_up(&self, due_ms: i64, now_ms: i64) -> Option<CatchUp> {
        if let Kind::Every { interval_ms } = self.kind {
            let skipped = (now_ms - due_ms).max(0) / interval_ms;
            return Some(CatchUp {
                next_ms: due_ms.checked_add((skipped + 1).checked_mul(interval_ms)?)?,
                missed: u32::try_from(skipped).unwrap_or(u32::MAX),
            });
        }
        let mut missed = 0;
        let mut next = self.next_after(due_ms)?;
        while next <= now_ms {
            missed += 1;
            if missed >= MAX_COUNTED_MISSES {
                next = self.next_after(now_ms)?;
                break;
            }
            next = self.next_after(next)?;
        }
        Some(CatchUp {
            next_ms: next,
            missed,
        })
    }
}

/// Repeated hours [`next_of`] passes over in a row: one is all a fall-back makes, and each is
/// passed whole.
const MAX_FOLDS_PASSED: usize = 4;

/// `cron`'s first run strictly after `after_ms` in `tz`. Across a fall-back, an expression with a
/// restricted hour (`30 1 * * *`, `15,45 1 * * *`, `*/30 1 * * *`) runs each of its wall-clock
/// times once, at the first occurrence, as cron does; one whose hour is a wildcard (`*/30 * * *
/// *`, `@hourly`) keeps running in real time through both. croner alone skips the second
/// occurrence only for a single minute of a single hour.
fn next_of(cron: &Cron, tz: &TimeZone, after_ms: i64) -> Option<i64> {
    let mut after = after_ms;
    for _ in 0..MAX_FOLDS_PASSED {
        let start = Timestamp::from_millisecond(after)
            .ok()?
            .to_zoned(tz.clone());
        let at = cron.find_next_occurrence(&start, false).ok()?;
        let at_ms = at.timestamp().as_millisecond();
        if at_ms <= after {
            return None;
        }
        if cron.pattern.hours.from_wildcard {
            return Some(at_ms);
        }
        match second_pass_end_ms(&at) {
            Some(end_ms) => after = end_ms - 1,
            None => return Some(at_ms),
        }
    }
    None
}

/// When `at` is in the second pass of a repeated hour (a fall-back), the first instant after
/// that pass: the transition plus the length of the fold (two hours in Antarctica/Troll).
fn second_pass_end_ms(at: &jiff::Zoned) -> Option<i64> {
    let tz = at.time_zone();
    let AmbiguousOffset::Fold { before, after } = tz.to_ambiguous_timestamp(at.datetime()).offset()
    else {
        return None;
    };
    if before == after || at.offset() != after {
        return None;
    }
    // The transition into this pass: the last one at or before `at`.
    let just_after = Timestamp::from_millisecond(at.timestamp().as_millisecond() + 1).ok()?;
    let transition = tz
        .preceding(just_after)
        .next()?
        .timestamp()
        .as_millisecond();
    Some(transition + i64::from(before.seconds() - after.seconds()) * 1000)
}

/// `CRON_TZ=Zone rest` (or `TZ=`) -> (zone, rest).
/// Whether `expression` names a time zone (`CRON_TZ=` or `TZ=` before it): only then does its
/// parse need the time-zone database.
pub fn names_zone(expression: &str) -> bool {
    zone_prefixed(expression.trim()).is_some()
}

fn zone_prefixed(expression: &str) -> Option<&str> {
    strip_prefix_ignore_case(expression, "CRON_TZ=")
        .or_else(|| strip_prefix_ignore_case(expression, "TZ="))
}

fn split_time_zone<'a>(
    expression: &'a str,
    zones: Option<&TimeZones>,
) -> Result<(Option<TimeZone>, &'a str), String> {
    let Some(rest) = zone_prefixed(expression) else {
        return Ok((None, expression));
    };
    let (name, body) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let zones = zones.ok_or("the time-zone database is not loaded")?;
    let tz = zones.get(name).ok_or_else(|| {
        format!("unknown time zone \"{name}\" (use an IANA name such as America/New_York)")
    })?;
    Ok((Some(tz), body.trim()))
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

const NAMED: [&str; 6] = [
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@hourly",
];

fn parse_calendar(part: &str) -> Result<Cron, String> {
    if part.is_empty() {
        return Err("an empty expression between ';'".to_string());
    }
    if part.starts_with('@') {
        if !NAMED.iter().any(|n| n.eq_ignore_ascii_case(part)) {
            return Err(format!(
                "unknown name \"{part}\" (expected one of {}, or @every <duration>)",
                NAMED.join(" ")
            ));
        }
    } else {
        let fields = part.split_whitespace().count();
        if fields != 5 {
            return Err(format!(
                "\"{part}\" has {fields} fields; expected 5: minute hour day-of-month month day-of-week"
            ));
        }
    }
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(part)
        .map_err(|e| format!("\"{part}\": {e}"))
}

/// Go-style durations plus days: `90m`, `1h30m`, `1.5h`, `7d`, `250ms`.
fn parse_every(text: &str) -> Result<i64, String> {
    if text.is_empty() {
        return Err("@every needs a duration, e.g. @every 1h30m".to_string());
    }
    let mut total_ns: u128 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(number_len);
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let unit_ns: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "d" => 86_400_000_000_000,
            "" => {
                return Err(format!(
                    "\"{text}\": a number without a unit (use ns us µs ms s m h d)"
                ))
            }
            other => {
                return Err(format!(
                    "\"{text}\": unknown unit \"{other}\" (use ns us µs ms s m h d)"
                ))
            }
        };
        total_ns = total_ns
            .checked_add(
                scaled(number, unit_ns)
                    .ok_or_else(|| format!("\"{text}\": \"{number}\" is not a number"))?,
            )
            .ok_or_else(|| format!("\"{text}\" is too long"))?;
        rest = tail;
    }
    let ms = i64::try_from(total_ns / 1_000_000).map_err(|_| format!("\"{text}\" is too long"))?;
    if ms < MIN_EVERY_MS {
        return Err(format!(
            "\"{text}\" is shorter than 1m: the sweep runs once a minute"
        ));
    }
    Ok(ms)
}

/// `number` (digits with an optional fraction) times `unit_ns`, exactly.
fn scaled(number: &str, unit_ns: u128) -> Option<u128> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let digits = |s: &str| -> Option<u128> {
        if s.is_empty() {
            Some(0)
        } else if s.len() <= 30 && s.bytes().all(|b| b.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    let whole_ns = digits(whole)?.checked_mul(unit_ns)?;
    let fraction_ns =
        digits(fraction)?.checked_mul(unit_ns)? / 10u128.checked_pow(fraction.len() as u32)?;
    whole_ns.checked_add(fraction_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::time_zones::bundled_blob;
    use crate::util::time_fmt::{parse_rfc3339, rfc3339};

    /// The database, read once for every test.
    fn zones() -> TimeZones<'static> {
        static BLOB: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        TimeZones::from_blob(BLOB.get_or_init(bundled_blob)).unwrap()
    }

    fn at(s: &str) -> i64 {
        parse_rfc3339(s).unwrap_or_else(|| panic!("bad time {s}"))
    }

    fn next(expression: &str, after: &str) -> String {
        let schedule = CronSchedule::parse(expression, Some(&zones())).expect(expression);
        rfc3339(schedule.next_after(at(after)).expect("a next run"))
    }

    fn error(expression: &str) -> String {
        CronSchedule::parse(expression, Some(&zones())).expect_err(expression)
    }

    #[test]
    fn a_zone_needs_the_database_and_nothing_else_does() {
        assert!(names_zone(" CRON_TZ=Europe/Berlin 0 9 * * *"));
        assert!(names_zone("tz=UTC @daily"));
        assert!(!names_zone("0 9 * * *"));
        let e = CronSchedule::parse("TZ=Europe/Berlin 0 9 * * *", None).unwrap_err();
        assert!(e.contains("not loaded"), "{e}");
        assert!(CronSchedule::parse("0 9 * * *", None).is_ok());
    }

    #[test]
    fn next_run_table() {
        let table = [
            // every minute, minute steps and ranges
            (
                "* * * * *",
                "2025-03-10T12:00:30Z",
                "2025-03-10T12:01:00.000Z",
            ),
            (
                "*/15 * * * *",
                "2025-03-10T12:00:00Z",
                "2025-03-10T12:15:00.000Z",
            ),
            (
                "5,35 * * * *",
                "2025-03-10T12:10:00Z",
                "2025-03-10T12:35:00.000Z",
            ),
            (
                "0 2 * * *",
                "2025-03-10T02:00:00Z",
                "2025-03-11T02:00:00.000Z",
            ),
            // month ends and leap years
            (
                "0 0 31 * *",
                "2025-04-01T00:00:00Z",
                "2025-05-31T00:00:00.000Z",
            ),
            (
                "0 0 29 2 *",
                "2025-01-01T00:00:00Z",
                "2028-02-29T00:00:00.000Z",
            ),
            (
                "0 0 1 * *",
                "2024-12-31T23:59:00Z",
                "2025-01-01T00:00:00.000Z",
            ),
            // names
            (
                "0 9 * jan,JUL mon-fri",
                "2025-06-01T00:00:00Z",
                "2025-07-01T09:00:00.000Z",
            ),
            (
                "0 0 * * SUN",
                "2025-03-10T00:00:00Z",
                "2025-03-16T00:00:00.000Z",
            ),
            (
                "0 0 * * 7",
                "2025-03-10T00:00:00Z",
                "2025-03-16T00:00:00.000Z",
            ),
            // day of month OR day of week when both are restricted (POSIX)
            (
                "0 0 13 * 5",
                "2025-06-01T00:00:00Z",
                "2025-06-06T00:00:00.000Z",
            ),
            // the last day, a weekday's last and its nth
            (
                "0 9 L * *",
                "2025-06-01T00:00:00Z",
                "2025-06-30T09:00:00.000Z",
            ),
            (
                "0 9 * * 5L",
                "2025-06-01T00:00:00Z",
                "2025-06-27T09:00:00.000Z",
            ),
            (
                "0 9 * * 5#2",
                "2025-06-01T00:00:00Z",
                "2025-06-13T09:00:00.000Z",
            ),
            // named forms
            (
                "@yearly",
                "2025-03-10T00:00:00Z",
                "2026-01-01T00:00:00.000Z",
            ),
            (
                "@annually",
                "2025-03-10T00:00:00Z",
                "2026-01-01T00:00:00.000Z",
            ),
            (
                "@monthly",
                "2025-03-10T00:00:00Z",
                "2025-04-01T00:00:00.000Z",
            ),
            (
                "@weekly",
                "2025-03-10T00:00:00Z",
                "2025-03-16T00:00:00.000Z",
            ),
            ("@daily", "2025-03-10T00:00:00Z", "2025-03-11T00:00:00.000Z"),
            (
                "@HOURLY",
                "2025-03-10T00:59:59Z",
                "2025-03-10T01:00:00.000Z",
            ),
            // time zones: 09:30 New York is 14:30 UTC in winter, 13:30 in summer
            (
                "CRON_TZ=America/New_York 30 9 * * 1-5",
                "2025-01-06T00:00:00Z",
                "2025-01-06T14:30:00.000Z",
            ),
            (
                "CRON_TZ=America/New_York 30 9 * * 1-5",
                "2025-07-04T14:00:00Z",
                "2025-07-07T13:30:00.000Z",
            ),
            (
                "TZ=Asia/Tokyo 0 0 * * *",
                "2025-03-10T00:00:00Z",
                "2025-03-10T15:00:00.000Z",
            ),
            // a union: market hours 09:30-16:00 every 5 minutes
            (MARKET, "2025-03-10T13:00:00Z", "2025-03-10T13:30:00.000Z"),
            (MARKET, "2025-03-10T13:55:00Z", "2025-03-10T14:00:00.000Z"),
            (MARKET, "2025-03-10T19:55:00Z", "2025-03-10T20:00:00.000Z"),
            (MARKET, "2025-03-10T20:00:00Z", "2025-03-11T13:30:00.000Z"),
            (MARKET, "2025-03-14T20:00:00Z", "2025-03-17T13:30:00.000Z"),
        ];
        for (expression, after, expected) in table {
            assert_eq!(
                next(expression, after),
                expected,
                "{expression} after {after}"
            );
        }
    }

    const MARKET: &str =
        "CRON_TZ=America/New_York 30-55/5 9 * * 1-5; */5 10-15 * * 1-5; 0 16 * * 1-5";

    #[test]
    fn dst_spring_forward_runs_after_the_gap() {
        // New York, 2025-03-09: 02:00 EST jumps to 03:00 EDT; 02:30 does not exist.
        let daily = "CRON_TZ=America/New_York 30 2 * * *";
        assert_eq!(
            next(daily, "2025-03-09T06:00:00Z"),
            "2025-03-09T07:00:00.000Z"
        ); // 03:00 EDT
        assert_eq!(
            next(daily, "2025-03-09T07:00:00Z"),
            "2025-03-10T06:30:00.000Z"
        ); // 02:30 EDT
           // An hourly job simply has no 02:00 that day.
        let hourly = "CRON_TZ=America/New_York 0 * * * *";
        assert_eq!(
            next(hourly, "2025-03-09T06:00:00Z"),
            "2025-03-09T07:00:00.000Z"
        ); // 01:00 EST -> 03:00 EDT
           // Nor do listed or stepped times in the gap: only a single time is carried over.
        assert_eq!(
            next(
                "CRON_TZ=America/New_York 15,45 2 * * *",
                "2025-03-09T06:00:00Z"
            ),
            "2025-03-10T06:15:00.000Z"
        ); // 02:15 EDT the next day
    }

    #[test]
    fn dst_fall_back_runs_the_repeated_hour_once() {
        // New York, 2025-11-02: 02:00 EDT falls back to 01:00 EST; 01:30 happens twice.
        let daily = "CRON_TZ=America/New_York 30 1 * * *";
        assert_eq!(
            next(daily, "2025-11-02T04:00:00Z"),
            "2025-11-02T05:30:00.000Z"
        ); // first 01:30 (EDT)
        assert_eq!(
            next(daily, "2025-11-02T05:30:00Z"),
            "2025-11-03T06:30:00.000Z"
        ); // not the second
           // So does each time of a restricted hour, however its minutes are given.
        for (listed, from, to) in [
            (
                "15,45 1 * * *",
                "2025-11-02T05:15:00Z",
                "2025-11-02T05:45:00.000Z",
            ),
            (
                "15,45 1 * * *",
                "2025-11-02T05:45:00Z",
                "2025-11-03T06:15:00.000Z",
            ),
            (
                "*/30 1 * * *",
                "2025-11-02T05:30:00Z",
                "2025-11-03T06:00:00.000Z",
            ),
            (
                "0,30 0-1 * * *",
                "2025-11-02T05:30:00Z",
                "2025-11-03T05:00:00.000Z",
            ),
        ] {
            let expression = format!("CRON_TZ=America/New_York {listed}");
            assert_eq!(next(&expression, from), to, "{listed} after {from}");
        }
        // Antarctica/Troll falls back two hours (03:00 +02 -> 01:00 +00): 120 minutes of second
        // occurrences, passed whole.
        assert_eq!(
            next(
                "CRON_TZ=Antarctica/Troll * 1-2 * * *",
                "2025-10-26T00:59:00Z"
            ),
            "2025-10-27T01:00:00.000Z"
        );
        // Interval jobs keep running through the repeated hour, in real time.
        let every_30 = "CRON_TZ=America/New_York */30 * * * *";
        assert_eq!(
            next(every_30, "2025-11-02T05:30:00Z"),
            "2025-11-02T06:00:00.000Z"
        );
        assert_eq!(
            next(every_30, "2025-11-02T06:00:00Z"),
            "2025-11-02T06:30:00.000Z"
        );
    }

    #[test]
    fn every_durations() {
        let every = |e: &str| match CronSchedule::parse(e, Some(&zones())).expect(e).kind {
            Kind::Every { interval_ms } => interval_ms,
            Kind::Calendar { .. } => panic!("{e} is not @every"),
        };
        assert_eq!(every("@every 1h"), 3_600_000);
        assert_eq!(every("@every 90m"), 5_400_000);
        assert_eq!(every("@every 1h30m"), 5_400_000);
        assert_eq!(every("@every 1.5h"), 5_400_000);
        assert_eq!(every("@every 7d"), 604_800_000);
        assert_eq!(every("@EVERY 2m30s"), 150_000);
        assert_eq!(every("@every 60000ms"), 60_000);
        assert_eq!(every("@every 60000000us"), 60_000);
        assert_eq!(every("@every 60000000µs"), 60_000);
        assert_eq!(every("@every 60000000000ns"), 60_000);
        assert_eq!(
            next("@every 1h30m", "2025-03-10T12:00:00Z"),
            "2025-03-10T13:30:00.000Z"
        );
    }

    #[test]
    fn bad_expressions_say_what_is_wrong() {
        let cases = [
            ("", "empty"),
            ("* * * *", "has 4 fields; expected 5"),
            ("0 * * * * *", "has 6 fields; expected 5"),
            ("61 * * * *", "\"61 * * * *\""),
            ("* 24 * * *", "\"* 24 * * *\""),
            ("* * * 13 *", "\"* * * 13 *\""),
            ("@fortnightly", "unknown name \"@fortnightly\""),
            (
                "CRON_TZ=Mars/Olympus 0 * * * *",
                "unknown time zone \"Mars/Olympus\"",
            ),
            ("CRON_TZ=UTC", "empty"),
            ("0 0 30 2 *", "never matches"),
            ("@every", "needs a duration"),
            ("@every 10", "without a unit"),
            ("@every 5w", "unknown unit \"w\""),
            ("@every 30s", "shorter than 1m"),
            ("@every 1h.m", "not a number"),
            ("CRON_TZ=UTC @every 1h", "no time zone"),
            ("0 * * * *;", "empty expression between ';'"),
        ];
        for (expression, expected) in cases {
            let e = error(expression);
            assert!(e.contains(expected), "{expression:?}: {e}");
        }
    }

    #[test]
    fn catch_up_runs_once_and_counts_the_misses() {
        let hourly = CronSchedule::parse("0 * * * *", None).unwrap();
        let due = at("2025-03-10T10:00:00Z");
        assert_eq!(
            hourly.catch_up(due, due),
            Some(CatchUp {
                next_ms: at("2025-03-10T11:00:00Z"),
                missed: 0
            })
        );
        // Down from 10:00 to 13:20: runs once now, 11:00, 12:00 and 13:00 were missed.
        assert_eq!(
            hourly.catch_up(due, at("2025-03-10T13:20:00Z")),
            Some(CatchUp {
                next_ms: at("2025-03-10T14:00:00Z"),
                missed: 3
            })
        );
        let every = CronSchedule::parse("@every 90m", None).unwrap();
        assert_eq!(
            every.catch_up(due, at("2025-03-10T14:00:00Z")),
            Some(CatchUp {
                next_ms: at("2025-03-10T14:30:00Z"),
                missed: 2
            })
        );
        let minutely = CronSchedule::parse("* * * * *", None).unwrap();
        let year_later = minutely.catch_up(due, due + 365 * 86_400_000).unwrap();
        assert_eq!(year_later.next_ms, due + 365 * 86_400_000 + 60_000);
        assert_eq!(year_later.missed, MAX_COUNTED_MISSES);
    }
}
