//! GET /metrics in the Prometheus text exposition format (0.0.4), rendered from what one D1
//! batch read. The job metrics (docs/operating.md "GET /metrics"), plus the dead-letter,
//! schedule-miss and open-alert counts an on-call engineer wants next to them, and the built-in
//! handlers' own: RSS fetches per source and AI tagging's items, tokens, cost and budget.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Deserialize;

use crate::budget::percent_used;
use crate::job::family::Family;
use crate::observe::execution_histogram::{HistogramRow, DURATION_BUCKETS_MS};

/// A labelled count read from D1 (`label` is a family, a type, a schedule or a rule).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct LabelledValue {
    pub label: String,
    pub value: f64,
}

/// Everything /metrics shows, as read.
#[derive(Clone, Debug, Default)]
pub struct MetricsSnapshot {
    pub histogram: Vec<HistogramRow>,
    /// Due jobs not running, per family.
    pub backlog: Vec<LabelledValue>,
    /// Screenshot jobs running now (the browser slots in use, 0-3).
    pub screenshot_running: f64,
    /// Spent cents per budgeted job type, over all months.
    pub budget_cents: Vec<LabelledValue>,
    pub dead_letters: Vec<LabelledValue>,
    pub schedule_missed: Vec<LabelledValue>,
    pub alerts_open: Vec<LabelledValue>,
    pub rss_sources: Vec<RssSourceCounts>,
    pub rss_errors: Vec<RssErrorCount>,
    pub tagging: TaggingTotals,
    /// Flow control per job type, over its keys (`flow_keys`).
    pub flow: Vec<FlowTypeTotals>,
}

/// What flow control did for one job type, summed over its keys.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct FlowTypeTotals {
    pub job_type: String,
    pub started: i64,
    pub waited: i64,
    pub handed_back: i64,
}

/// One RSS source's counters (`rss_sources`): items by status, and fetch time by result.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct RssSourceCounts {
    pub source_id: String,
    pub items_new: f64,
    pub items_duplicate: f64,
    pub fetch_ok_count: f64,
    pub fetch_ok_ms: f64,
    pub fetch_failed_count: f64,
    pub fetch_failed_ms: f64,
}

/// One RSS source's failed fetches of one type (`rss_sources.errors_by_type`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct RssErrorCount {
    pub source_id: String,
    pub error_type: String,
    pub count: f64,
}

/// AI tagging over every month (`budgets`), and this month's spend and limit.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct TaggingTotals {
    pub items_tagged: f64,
    pub items_failed: f64,
    pub tokens_input: f64,
    pub tokens_output: f64,
    pub cost_cents: f64,
    pub throttles: f64,
    pub month_spent_cents: f64,
    pub month_limit_cents: i64,
}

pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One counter of each type's flow control.
fn flow(
    rows: &[FlowTypeTotals],
    count: fn(&FlowTypeTotals) -> i64,
) -> Vec<(Vec<(&'static str, String)>, f64)> {
    rows.iter()
        .map(|t| (vec![("job_type", t.job_type.clone())], count(t) as f64))
        .collect()
}

/// The exposition text.
pub fn render(s: &MetricsSnapshot) -> String {
    let mut out = String::new();
    histogram(&mut out, &s.histogram);
    let by_type = |status| {
        totals_by_status(&s.histogram, status)
            .into_iter()
            .map(|((job_type, family), n)| {
                (
                    vec![
                        ("job_type", job_type.to_string()),
                        ("queue", family.to_string()),
                    ],
                    n as f64,
                )
            })
            .collect::<Vec<_>>()
    };
    let by_family = |rows: &[LabelledValue]| {
        Family::ALL
            .iter()
            .map(|f| {
                (
                    vec![("queue", f.as_str().to_string())],
                    find(rows, f.as_str()),
                )
            })
            .collect::<Vec<_>>()
    };
    let by_label = |key: &'static str, rows: &[LabelledValue], scale: f64| {
        rows.iter()
            .map(|r| (vec![(key, r.label.clone())], r.value * scale))
            .collect::<Vec<_>>()
    };
    let labelled = |key: &'static str, pairs: [(&str, f64); 2]| {
        pairs
            .into_iter()
            .map(|(label, n)| (vec![(key, label.to_string())], n))
            .collect::<Vec<_>>()
    };
    let t = &s.tagging;
    let families = [
        (
            "job_retry_total",
            "counter",
            "Failed attempts that were retried, by type and queue.",
            by_type("retrying"),
        ),
        (
            "job_exhausted_total",
            "counter",
            "Jobs that went dead after an attempt, by type and queue.",
            by_type("dead"),
        ),
        (
            "job_queue_backlog_total",
            "gauge",
            "Jobs due and waiting to run, by queue (family).",
            by_family(&s.backlog),
        ),
        (
            "screenshot_concurrency_utilization",
            "gauge",
            "Screenshot jobs running now: browser slots in use (0-3).",
            vec![(Vec::new(), s.screenshot_running)],
        ),
        (
            "job_budget_consumed_dollars",
            "counter",
            "Spend of budgeted job types, in dollars.",
            by_label("job_type", &s.budget_cents, 0.01),
        ),
        (
            "job_dead_letters_total",
            "counter",
            "Arrivals in each family's dead-letter queue.",
            by_family(&s.dead_letters),
        ),
        (
            "job_flow_started_total",
            "counter",
            "Jobs flow control let start, by type (docs/app-guide.md \"Flow control\").",
            flow(&s.flow, |t| t.started),
        ),
        (
            "job_flow_waited_total",
            "counter",
            "Jobs a flow-control limit held back before they started, by type.",
            flow(&s.flow, |t| t.waited),
        ),
        (
            "job_flow_handed_back_total",
            "counter",
            "Jobs flow control handed back to the queue after their wait in a batch, by type.",
            flow(&s.flow, |t| t.handed_back),
        ),
        (
            "job_schedule_missed_runs_total",
            "counter",
            "Runs of each schedule swallowed by downtime (it ran once instead).",
            by_label("schedule", &s.schedule_missed, 1.0),
        ),
        (
            "job_alerts_open",
            "gauge",
            "Open alerts, by rule.",
            by_label("rule", &s.alerts_open, 1.0),
        ),
        (
            "rss_fetch_items_total",
            "counter",
            "Feed items an RSS refresh stored (new) or already had (duplicate), by source.",
            s.rss_sources
                .iter()
                .flat_map(|r| {
                    [("new", r.items_new), ("duplicate", r.items_duplicate)].map(|(status, n)| {
                        let labels = vec![
                            ("source_id", r.source_id.clone()),
                            ("status", status.to_string()),
                        ];
                        (labels, n)
                    })
                })
                .collect(),
        ),
        (
            "rss_fetch_errors_total",
            "counter",
            "Failed RSS fetches, by source and error type (http_<status> or the error class).",
            s.rss_errors
                .iter()
                .map(|e| {
                    let labels = vec![
                        ("source_id", e.source_id.clone()),
                        ("error_type", e.error_type.clone()),
                    ];
                    (labels, e.count)
                })
                .collect(),
        ),
        (
            "ai_tagging_items_total",
            "counter",
            "Feed items AI tagging tagged (success) or could not (failure).",
            labelled(
                "status",
                [("success", t.items_tagged), ("failure", t.items_failed)],
            ),
        ),
        (
            "ai_tagging_tokens_total",
            "counter",
            "LLM tokens AI tagging used, by type.",
            labelled(
                "type",
                [("input", t.tokens_input), ("output", t.tokens_output)],
            ),
        ),
        (
            "ai_tagging_cost_cents_total",
            "counter",
            "What AI tagging's LLM calls cost, in cents.",
            vec![(Vec::new(), t.cost_cents)],
        ),
        (
            "ai_tagging_budget_throttles_total",
            "counter",
            "AI tagging runs the budget held back (queue or hard_stop).",
            vec![(Vec::new(), t.throttles)],
        ),
        (
            "ai_budget_percent_used",
            "gauge",
            "Share of this month's AI tagging budget spent (0-100 and over).",
            vec![(
                Vec::new(),
                percent_used(t.month_spent_cents, t.month_limit_cents),
            )],
        ),
    ];
    for (name, kind, help, samples) in families {
        header(&mut out, name, kind, help);
        for (labels, value) in samples {
            let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            sample(&mut out, name, &labels, value);
        }
    }
    rss_fetch_duration(&mut out, &s.rss_sources);
    out
}

/// `rss_fetch_duration_seconds`: a summary (sum and count) per source and result.
fn rss_fetch_duration(out: &mut String, rows: &[RssSourceCounts]) {
    let name = "rss_fetch_duration_seconds";
    header(
        out,
        name,
        "summary",
        "Time to fetch and parse a feed, by source and result.",
    );
    let (sum, count) = (format!("{name}_sum"), format!("{name}_count"));
    for r in rows {
        for (result, n, ms) in [
            ("success", r.fetch_ok_count, r.fetch_ok_ms),
            ("failure", r.fetch_failed_count, r.fetch_failed_ms),
        ] {
            let labels = [("source_id", r.source_id.as_str()), ("result", result)];
            sample(out, &sum, &labels, ms / 1000.0);
            sample(out, &count, &labels, n);
        }
    }
}

/// One histogram series' counts per bucket (not cumulative), count and sum, as summed over
/// its rows.
#[derive(Default)]
struct Series {
    buckets: [i64; DURATION_BUCKETS_MS.len()],
    count: i64,
    sum_ms: i64,
}

fn histogram(out: &mut String, rows: &[HistogramRow]) {
    let name = "job_execution_duration_seconds";
    header(
        out,
        name,
        "histogram",
        "Execution time of job attempts, by type, queue and outcome.",
    );
    let mut series: BTreeMap<(&str, &str, &str), Series> = BTreeMap::new();
    for r in rows {
        let s = series
            .entry((r.job_type.as_str(), r.family.as_str(), r.status.as_str()))
            .or_default();
        // The last index (+Inf), like any other outside the bounds, shows only in the count.
        if let Some(n) = usize::try_from(r.bucket)
            .ok()
            .and_then(|i| s.buckets.get_mut(i))
        {
            *n += r.count;
        }
        s.count += r.count;
        s.sum_ms += r.sum_ms;
    }
    let les = DURATION_BUCKETS_MS.map(|le| format_value(le as f64 / 1000.0));
    let (bucket, sum, count) = (
        format!("{name}_bucket"),
        format!("{name}_sum"),
        format!("{name}_count"),
    );
    for ((job_type, family, status), s) in series {
        let labels = [
            ("job_type", job_type),
            ("queue", family),
            ("status", status),
        ];
        let with_le = |le| [labels[0], labels[1], labels[2], ("le", le)];
        let mut cumulative = 0;
        for (n, le) in s.buckets.iter().zip(&les) {
            cumulative += n;
            sample(out, &bucket, &with_le(le), cumulative as f64);
        }
        sample(out, &bucket, &with_le("+Inf"), s.count as f64);
        sample(out, &sum, &labels, s.sum_ms as f64 / 1000.0);
        sample(out, &count, &labels, s.count as f64);
    }
}

/// Counts of one status per (type, family), in label order.
fn totals_by_status<'a>(
    rows: &'a [HistogramRow],
    status: &str,
) -> BTreeMap<(&'a str, &'a str), i64> {
    let mut totals = BTreeMap::new();
    for r in rows.iter().filter(|r| r.status == status) {
        *totals
            .entry((r.job_type.as_str(), r.family.as_str()))
            .or_default() += r.count;
    }
    totals
}

fn find(rows: &[LabelledValue], label: &str) -> f64 {
    rows.iter()
        .filter(|r| r.label == label)
        .map(|r| r.value)
        .sum()
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: f64) {
    out.push_str(name);
    if !labels.is_empty() {
        let pairs: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect();
        let _ = write!(out, "{{{}}}", pairs.join(","));
    }
    let _ = writeln!(out, " {}", format_value(value));
}

/// Label values escape backslash, double quote and newline (the format's only escapes).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn format_value(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: &str, bucket: i64, count: i64, sum_ms: i64) -> HistogramRow {
        HistogramRow {
            job_type: "noop".into(),
            family: "default".into(),
            status: status.into(),
            bucket,
            count,
            sum_ms,
        }
    }

    #[test]
    fn renders_a_cumulative_histogram_and_counters() {
        let s = MetricsSnapshot {
            histogram: vec![
                row("succeeded", 0, 2, 4),
                row("succeeded", 7, 1, 700),
                row("retrying", 3, 1, 40),
            ],
            backlog: vec![LabelledValue {
                label: "high".into(),
                value: 3.0,
            }],
            screenshot_running: 2.0,
            budget_cents: vec![LabelledValue {
                label: "ai_tagging".into(),
                value: 1234.0,
            }],
            schedule_missed: vec![LabelledValue {
                label: "a \"b\"".into(),
                value: 1.0,
            }],
            ..MetricsSnapshot::default()
        };
        let text = render(&s);
        let has = |line: &str| {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            )
        };
        has("# TYPE job_execution_duration_seconds histogram");
        has(
            r#"job_execution_duration_seconds_bucket{job_type="noop",queue="default",status="succeeded",le="0.005"} 2"#,
        );
        has(
            r#"job_execution_duration_seconds_bucket{job_type="noop",queue="default",status="succeeded",le="0.5"} 2"#,
        );
        has(
            r#"job_execution_duration_seconds_bucket{job_type="noop",queue="default",status="succeeded",le="1"} 3"#,
        );
        has(
            r#"job_execution_duration_seconds_bucket{job_type="noop",queue="default",status="succeeded",le="+Inf"} 3"#,
        );
        has(
            r#"job_execution_duration_seconds_sum{job_type="noop",queue="default",status="succeeded"} 0.704"#,
        );
        has(
            r#"job_execution_duration_seconds_count{job_type="noop",queue="default",status="succeeded"} 3"#,
        );
        has(r#"job_retry_total{job_type="noop",queue="default"} 1"#);
        has(r#"job_queue_backlog_total{queue="high"} 3"#);
        has(r#"job_queue_backlog_total{queue="bulk"} 0"#);
        has("screenshot_concurrency_utilization 2");
        has(r#"job_budget_consumed_dollars{job_type="ai_tagging"} 12.34"#);
        has(r#"job_dead_letters_total{queue="low"} 0"#);
        has(r#"job_schedule_missed_runs_total{schedule="a \"b\""} 1"#);
    }

    #[test]
    fn renders_the_rss_and_ai_tagging_metrics() {
        let s = MetricsSnapshot {
            rss_sources: vec![RssSourceCounts {
                source_id: "s1".into(),
                items_new: 2.0,
                items_duplicate: 1.0,
                fetch_ok_count: 1.0,
                fetch_ok_ms: 250.0,
                fetch_failed_count: 2.0,
                fetch_failed_ms: 40.0,
            }],
            rss_errors: vec![RssErrorCount {
                source_id: "s1".into(),
                error_type: "http_404".into(),
                count: 2.0,
            }],
            tagging: TaggingTotals {
                items_tagged: 45.0,
                items_failed: 6.0,
                tokens_input: 900.0,
                tokens_output: 300.0,
                cost_cents: 12.5,
                throttles: 1.0,
                month_spent_cents: 760.0,
                month_limit_cents: 1000,
            },
            ..MetricsSnapshot::default()
        };
        let text = render(&s);
        for line in [
            r#"rss_fetch_items_total{source_id="s1",status="new"} 2"#,
            r#"rss_fetch_items_total{source_id="s1",status="duplicate"} 1"#,
            r#"rss_fetch_errors_total{source_id="s1",error_type="http_404"} 2"#,
            "# TYPE rss_fetch_duration_seconds summary",
            r#"rss_fetch_duration_seconds_sum{source_id="s1",result="success"} 0.25"#,
            r#"rss_fetch_duration_seconds_count{source_id="s1",result="failure"} 2"#,
            r#"ai_tagging_items_total{status="success"} 45"#,
            r#"ai_tagging_items_total{status="failure"} 6"#,
            r#"ai_tagging_tokens_total{type="output"} 300"#,
            "ai_tagging_cost_cents_total 12.5",
            "ai_tagging_budget_throttles_total 1",
            "ai_budget_percent_used 76",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }
}
