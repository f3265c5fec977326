//! Who hears about what, and the messages they get (docs/operating.md "Escalation of dead jobs"): a
//! job of the high family that goes dead pages (PagerDuty Events API v2 `trigger`), default and
//! screenshot post to a chat webhook (Slack style) with a link to the job on the dashboard,
//! low and bulk are collected into one digest a day. Alerts use the same two channels, and a
//! cleared alert is resolved there. Nothing is sent to a channel whose config is unset.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::util::severity::Severity;

pub const PAGERDUTY_DEFAULT_URL: &str = "https://events.pagerduty.com/v2/enqueue";

/// The channels' config, from vars and secrets.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EscalationConfig {
    /// `PAGERDUTY_EVENTS_URL` (default: PagerDuty's Events API v2).
    pub pagerduty_url: String,
    /// `PAGERDUTY_ROUTING_KEY` (secret): without it nothing pages.
    pub pagerduty_routing_key: Option<String>,
    /// `SLACK_WEBHOOK_URL` (secret): without it nothing is posted to chat.
    pub slack_webhook_url: Option<String>,
    /// `DIGEST_WEBHOOK_URL` (secret; default: the Slack webhook): where the daily digest goes.
    pub digest_webhook_url: Option<String>,
    /// `DASHBOARD_URL`: the deployed producer's base URL, for links to jobs.
    pub dashboard_url: Option<String>,
}

impl EscalationConfig {
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> EscalationConfig {
        let slack = var("SLACK_WEBHOOK_URL");
        EscalationConfig {
            pagerduty_url: var("PAGERDUTY_EVENTS_URL")
                .unwrap_or_else(|| PAGERDUTY_DEFAULT_URL.into()),
            pagerduty_routing_key: var("PAGERDUTY_ROUTING_KEY"),
            digest_webhook_url: var("DIGEST_WEBHOOK_URL").or_else(|| slack.clone()),
            slack_webhook_url: slack,
            dashboard_url: var("DASHBOARD_URL").map(|u| u.trim_end_matches('/').to_string()),
        }
    }

    /// The dashboard page of one job (the page opens it from the fragment).
    pub fn job_link(&self, id: &str) -> Option<String> {
        self.dashboard_url
            .as_ref()
            .map(|base| format!("{base}/dashboard/#job={id}"))
    }
}

/// A dead job, as the escalation reads it from D1.
#[derive(Clone, Debug, Deserialize)]
pub struct DeadJob {
    pub id: String,
    #[serde(rename = "type")]
    pub job_type: String,
    pub family: String,
    pub attempts: i64,
    pub max_attempts: i64,
    pub runs: i64,
    pub error_class: Option<String>,
    pub last_error: Option<String>,
    pub correlation_id: Option<String>,
}

impl DeadJob {
    fn error(&self) -> String {
        format!(
            "{}: {}",
            self.error_class.as_deref().unwrap_or("unknown"),
            self.last_error.as_deref().unwrap_or("no message")
        )
    }

    fn headline(&self) -> String {
        format!(
            "Job {} ({}, {} family) is dead after {} of {} attempts",
            self.id, self.job_type, self.family, self.attempts, self.max_attempts
        )
    }
}

/// PagerDuty Events API v2 `trigger` for a dead job. The dedup key names the job and its run,
/// so a repeated send is one incident, and a later death after a retry is a new one.
pub fn pagerduty_job_dead(routing_key: &str, job: &DeadJob, link: Option<&str>) -> Value {
    json!({
        "routing_key": routing_key,
        "event_action": "trigger",
        "dedup_key": format!("job-dead:{}:{}", job.id, job.runs),
        "payload": {
            "summary": format!("{}: {}", job.headline(), job.error()),
            "source": "cf-jobs",
            "severity": "critical",
            "component": job.job_type,
            "group": job.family,
            "class": job.error_class.as_deref().unwrap_or("unknown"),
            "custom_details": {
                "job_id": job.id,
                "job_type": job.job_type,
                "family": job.family,
                "attempts": job.attempts,
                "error": job.last_error,
                "correlation_id": job.correlation_id,
            },
        },
        "links": link.map(|href| vec![json!({ "href": href, "text": "Open the job on the dashboard" })]).unwrap_or_default(),
    })
}

/// A Slack-style message for a dead job.
pub fn slack_job_dead(job: &DeadJob, link: Option<&str>) -> Value {
    let mut text = format!(":x: {}\n`{}`", job.headline(), job.error());
    if let Some(href) = link {
        text.push_str(&format!("\n<{href}|Open the job on the dashboard>"));
    }
    if let Some(cid) = &job.correlation_id {
        text.push_str(&format!("\ncorrelation id: `{cid}`"));
    }
    json!({ "text": text })
}

/// PagerDuty `trigger` (open, with its severity and summary) or `resolve` (cleared, `None`) for
/// an alert; the same dedup key ties both.
pub fn pagerduty_alert(
    routing_key: &str,
    rule: &str,
    key: &str,
    open: Option<(Severity, &str)>,
) -> Value {
    let dedup_key = format!("alert:{rule}:{key}");
    match open {
        Some((severity, summary)) => json!({
            "routing_key": routing_key,
            "event_action": "trigger",
            "dedup_key": dedup_key,
            "payload": {
                "summary": summary,
                "source": "cf-jobs",
                "severity": severity.as_str(),
                "component": rule,
                "group": key,
            },
        }),
        None => {
            json!({ "routing_key": routing_key, "event_action": "resolve", "dedup_key": dedup_key })
        }
    }
}

/// A Slack-style message for an alert opening (with its severity and summary) or resolving.
pub fn slack_alert(rule: &str, key: &str, open: Option<(Severity, &str)>) -> Value {
    let text = match open {
        Some((severity, summary)) => {
            let icon = if severity == Severity::Info {
                ":information_source:"
            } else {
                ":warning:"
            };
            format!(
                "{icon} [{}] alert {rule}/{key} firing: {summary}",
                severity.as_str()
            )
        }
        None => format!(":white_check_mark: alert {rule}/{key} resolved"),
    };
    json!({ "text": text })
}

/// One line of the daily digest: dead jobs of one type and error class.
#[derive(Clone, Debug, Deserialize)]
pub struct DigestLine {
    pub family: String,
    #[serde(rename = "type")]
    pub job_type: String,
    pub error_class: Option<String>,
    pub count: i64,
    /// One of the group's messages, as an example.
    pub example: Option<String>,
}

/// The day's digest of low and bulk jobs that went dead (`day` is YYYY-MM-DD, UTC).
pub fn digest_message(day: &str, lines: &[DigestLine], dashboard_url: Option<&str>) -> Value {
    let total: i64 = lines.iter().map(|l| l.count).sum();
    let mut text =
        format!(":card_index: Dead jobs digest for {day} (low and bulk): {total} job(s)");
    for l in lines {
        text.push_str(&format!(
            "\n- {} x {} ({}) {}: {}",
            l.count,
            l.job_type,
            l.family,
            l.error_class.as_deref().unwrap_or("unknown"),
            l.example.as_deref().unwrap_or("")
        ));
    }
    if let Some(base) = dashboard_url {
        text.push_str(&format!(
            "\n<{base}/dashboard/|Dead letters on the dashboard>"
        ));
    }
    json!({ "text": text })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> DeadJob {
        DeadJob {
            id: "01J".into(),
            job_type: "stock_refresh".into(),
            family: "high".into(),
            attempts: 5,
            max_attempts: 5,
            runs: 5,
            error_class: Some("server_error".into()),
            last_error: Some("HTTP 503".into()),
            correlation_id: Some("abc".into()),
        }
    }

    #[test]
    fn config_defaults_and_links() {
        let c = EscalationConfig::from_vars(|name| match name {
            "SLACK_WEBHOOK_URL" => Some("https://hooks/x".into()),
            "DASHBOARD_URL" => Some("https://jobs.example/".into()),
            _ => None,
        });
        assert_eq!(c.pagerduty_url, PAGERDUTY_DEFAULT_URL);
        assert_eq!(c.pagerduty_routing_key, None);
        assert_eq!(c.digest_webhook_url.as_deref(), Some("https://hooks/x"));
        assert_eq!(
            c.job_link("01J").as_deref(),
            Some("https://jobs.example/dashboard/#job=01J")
        );
    }

    #[test]
    fn pagerduty_trigger_for_a_dead_job() {
        let event = pagerduty_job_dead("rk", &job(), Some("https://d/#job=01J"));
        assert_eq!(event["event_action"], "trigger");
        assert_eq!(event["routing_key"], "rk");
        assert_eq!(event["dedup_key"], "job-dead:01J:5");
        assert_eq!(event["payload"]["severity"], "critical");
        assert!(event["payload"]["summary"]
            .as_str()
            .unwrap()
            .contains("server_error: HTTP 503"));
        assert_eq!(event["links"][0]["href"], "https://d/#job=01J");
    }

    #[test]
    fn slack_message_names_job_error_and_link() {
        let text = slack_job_dead(&job(), Some("https://d/#job=01J"))["text"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            text.contains("01J")
                && text.contains("HTTP 503")
                && text.contains("<https://d/#job=01J|"),
            "{text}"
        );
    }

    #[test]
    fn alerts_trigger_and_resolve_with_one_dedup_key() {
        let open = pagerduty_alert("rk", "backlog", "high", Some((Severity::Warning, "s")));
        let resolve = pagerduty_alert("rk", "backlog", "high", None);
        assert_eq!(open["dedup_key"], resolve["dedup_key"]);
        assert_eq!(
            (
                open["event_action"].as_str(),
                resolve["event_action"].as_str()
            ),
            (Some("trigger"), Some("resolve"))
        );
        assert!(slack_alert("backlog", "high", None)["text"]
            .as_str()
            .unwrap()
            .contains("resolved"));
    }

    #[test]
    fn digest_aggregates_lines() {
        let lines = vec![DigestLine {
            family: "bulk".into(),
            job_type: "image_processing".into(),
            error_class: Some("client_error".into()),
            count: 3,
            example: Some("HTTP 404".into()),
        }];
        let text = digest_message("2025-06-01", &lines, None)["text"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            text.contains("2025-06-01")
                && text.contains("3 job(s)")
                && text.contains("3 x image_processing"),
            "{text}"
        );
    }
}
