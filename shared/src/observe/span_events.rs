//! The span events a handler logs about its own work (docs/operating.md "Log schema", span events):
//! one JSON line each, the job's span attributes and correlation id first, under the event's own
//! name (`fetch.started`, `item.tagged`...). A per-job event is always written. Per-source and
//! per-item events are bounded per attempt by `SPAN_EVENTS_MAX`: past it they are only counted,
//! and one `events.suppressed` line says how many of each, so a refresh of many sources or a
//! tagging run of many items costs a bounded number of log lines.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::observe::job_event::{span_line, JobRef};
use crate::util::config_var::int_var;

/// Per-source and per-item lines one attempt writes by default.
pub const DEFAULT_SPAN_EVENTS_MAX: u32 = 50;
const MAX_SPAN_EVENTS_MAX: i64 = 10_000;

/// `SPAN_EVENTS_MAX` (1-10,000); a bad value keeps the default and is reported in `warnings`.
pub fn span_events_max(value: Option<String>, warnings: &mut Vec<String>) -> u32 {
    int_var(
        "SPAN_EVENTS_MAX",
        value,
        MAX_SPAN_EVENTS_MAX,
        DEFAULT_SPAN_EVENTS_MAX,
        warnings,
    )
    .map_or(DEFAULT_SPAN_EVENTS_MAX, |n| n as u32)
}

/// One attempt's span events: the lines to write, and the count of those held back.
pub struct SpanEvents<'a> {
    job: JobRef<'a>,
    max: u32,
    written: u32,
    suppressed: BTreeMap<&'static str, u64>,
}

impl<'a> SpanEvents<'a> {
    pub fn new(job: JobRef<'a>, max: u32) -> SpanEvents<'a> {
        SpanEvents {
            job,
            max,
            written: 0,
            suppressed: BTreeMap::new(),
        }
    }

    /// A per-job event's line: always written.
    pub fn once(&self, name: &str, level: &str, attrs: &[(&str, Value)]) -> Value {
        let mut line = span_line(name, level, &self.job);
        for (key, value) in attrs {
            line.insert((*key).into(), value.clone());
        }
        Value::Object(line)
    }

    /// A per-source or per-item event's line, while fewer than the bound were written; past
    /// it `None`, and the event is counted for [`SpanEvents::summary`].
    pub fn each(
        &mut self,
        name: &'static str,
        level: &str,
        attrs: &[(&str, Value)],
    ) -> Option<Value> {
        if self.written < self.max {
            self.written += 1;
            return Some(self.once(name, level, attrs));
        }
        *self.suppressed.entry(name).or_default() += 1;
        None
    }

    /// `events.suppressed`, once per attempt that held any back: how many of each event, and
    /// the bound.
    pub fn summary(&self) -> Option<Value> {
        if self.suppressed.is_empty() {
            return None;
        }
        let attrs = [
            ("suppressed", json!(self.suppressed)),
            ("span_events.max", json!(self.max)),
        ];
        Some(self.once("events.suppressed", "info", &attrs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: JobRef<'static> = JobRef {
        id: "01J",
        job_type: "rss_feed_refresh",
        queue: "low",
        attempt: 1,
        correlation_id: "cid",
    };

    #[test]
    fn lines_carry_the_job_and_the_attributes() {
        let events = SpanEvents::new(JOB, 5);
        let line = events.once("source.not_found", "warn", &[("source_id", json!("s1"))]);
        assert_eq!(line["event"], "source.not_found");
        assert_eq!(line["level"], "warn");
        assert_eq!(
            [&line["job.id"], &line["job.type"], &line["correlation_id"]],
            [&json!("01J"), &json!("rss_feed_refresh"), &json!("cid")]
        );
        assert_eq!(line["job.handler"], "consumer::handlers::rss_refresh");
        assert_eq!(line["source_id"], "s1");
        assert_eq!(events.summary(), None, "nothing held back, no summary");
    }

    #[test]
    fn per_item_events_stop_at_the_bound_and_are_counted_once() {
        let mut events = SpanEvents::new(JOB, 3);
        let written: Vec<bool> = (0..5)
            .map(|i| {
                let name = if i % 2 == 0 {
                    "fetch.started"
                } else {
                    "parse.completed"
                };
                events.each(name, "info", &[]).is_some()
            })
            .collect();
        assert_eq!(written, [true, true, true, false, false]);
        // Per-job events are never held back.
        assert_eq!(
            events.once("refresh.completed", "info", &[])["event"],
            "refresh.completed"
        );
        let summary = events.summary().unwrap();
        assert_eq!(summary["event"], "events.suppressed");
        assert_eq!(
            summary["suppressed"],
            json!({"fetch.started": 1, "parse.completed": 1})
        );
        assert_eq!(summary["span_events.max"], 3);
        assert_eq!(summary["job.id"], "01J");
    }

    #[test]
    fn the_bound_reads_its_var() {
        let mut warnings = Vec::new();
        assert_eq!(
            span_events_max(None, &mut warnings),
            DEFAULT_SPAN_EVENTS_MAX
        );
        assert_eq!(span_events_max(Some("7".into()), &mut warnings), 7);
        assert!(warnings.is_empty());
        assert_eq!(
            span_events_max(Some("0".into()), &mut warnings),
            DEFAULT_SPAN_EVENTS_MAX
        );
        assert!(warnings[0].contains("SPAN_EVENTS_MAX"));
    }
}
