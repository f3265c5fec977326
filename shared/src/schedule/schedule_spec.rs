//! Validation of a recurring job (a schedule) for `/v1/admin/schedules`: its fields
//! (docs/operating.md "Schedules API") plus the job options of an enqueue, checked by the enqueue
//! validator itself so a schedule can never hold a job that enqueue would refuse, and its cron
//! expression parsed now so a bad one is a 422 at write time, never a failure at tick time.

use crate::job::enqueue::validate_enqueue;
use crate::job::job_type::JobType;
use crate::request::api_error::ApiError;
use crate::request::field_error::{decode_fields, empty_object, invalid, not_an_object};
use crate::retry::retry_policy::QueueDelayLimit;
use crate::schedule::cron_schedule::CronSchedule;
use crate::schedule::time_zones::TimeZones;
use serde::Deserialize;
use serde_json::{json, Value};

const MAX_NAME_CHARS: usize = 100;
const MAX_TEXT_CHARS: usize = 1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleRequest {
    name: String,
    description: Option<String>,
    #[serde(rename = "type")]
    job_type: String,
    #[serde(default = "empty_object")]
    payload: Value,
    cron_expression: String,
    #[serde(default = "yes")]
    enabled: bool,
    priority: Option<i64>,
    max_attempts: Option<i64>,
    retry: Option<Value>,
    dedup_key: Option<String>,
    created_by: Option<String>,
}

fn yes() -> bool {
    true
}

/// A checked schedule, ready to write.
#[derive(Debug, Clone)]
pub struct ScheduleSpec {
    pub name: String,
    pub description: Option<String>,
    pub job_type: JobType,
    /// Compact JSON.
    pub payload: String,
    pub cron_expression: String,
    pub cron: CronSchedule,
    pub enabled: bool,
    pub priority: i64,
    /// `None`: the type's default at each run.
    pub max_attempts: Option<u32>,
    /// Each run's own retry policy as a job stores it; `None`: the type's.
    pub retry_policy: Option<String>,
    pub dedup_key: Option<String>,
    pub created_by: Option<String>,
}

/// A schedule's name is its address too (`/v1/admin/schedules/{id or name}`): so it is a path
/// segment as written (no escaping, not `.` or `..`), and never a number, which would read as
/// an id (`store::schedules`).
fn check_name(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | ':');
    if name.is_empty() || name.len() > MAX_NAME_CHARS || !name.chars().all(allowed) {
        return Err(format!(
            "must be 1 to {MAX_NAME_CHARS} of A-Z a-z 0-9 _ . - : (it is the schedule's address)"
        ));
    }
    if name.parse::<i64>().is_ok() {
        return Err("must not be a number: /v1/admin/schedules/{id} would read it as an id".into());
    }
    if name.bytes().all(|b| b == b'.') {
        return Err("must not be only dots: a URL path would drop it".into());
    }
    Ok(())
}

/// Checks a whole schedule (create, PUT, or a PATCH merged onto the stored one); `zones` is
/// the time-zone database, which a cron expression that names a zone needs
/// (`cron_schedule::names_zone`).
pub fn validate_schedule(
    body: &Value,
    zones: Option<&TimeZones>,
) -> Result<ScheduleSpec, ApiError> {
    if !body.is_object() {
        return Err(not_an_object());
    }
    let req: ScheduleRequest = decode_fields(body)?;
    let name = req.name.trim().to_string();
    check_name(&name).map_err(|message| invalid("invalid_field", "name", message))?;
    for (field, text) in [
        ("description", &req.description),
        ("created_by", &req.created_by),
    ] {
        if text
            .as_ref()
            .is_some_and(|t| t.chars().count() > MAX_TEXT_CHARS)
        {
            let message = format!("must be at most {MAX_TEXT_CHARS} characters");
            return Err(invalid("invalid_field", field, message));
        }
    }
    let cron = CronSchedule::parse(&req.cron_expression, zones)
        .map_err(|message| invalid("invalid_cron", "cron_expression", message))?;
    // The job each run enqueues, checked exactly as POST /v1/jobs would check it.
    let mut job = json!({ "type": req.job_type, "payload": req.payload });
    for (key, value) in [
        ("priority", req.priority.map(Value::from)),
        ("max_attempts", req.max_attempts.map(Value::from)),
        ("retry", req.retry.clone()),
        ("dedup_key", req.dedup_key.clone().map(Value::from)),
    ] {
        if let Some(value) = value {
            job[key] = value;
        }
    }
    let checked = validate_enqueue(&job, String::new(), 0, QueueDelayLimit::DEFAULT)?;
    Ok(ScheduleSpec {
        name,
        description: req.description,
        job_type: checked.job_type,
        payload: checked.payload,
        cron_expression: req.cron_expression.trim().to_string(),
        cron,
        enabled: req.enabled,
        priority: checked.priority,
        // Given, or brought by a retry preset (`quick`): otherwise the type's at each run.
        max_attempts: (req.max_attempts.is_some()
            || checked.max_attempts != checked.job_type.spec().max_attempts)
            .then_some(checked.max_attempts),
        retry_policy: checked.retry_policy,
        dedup_key: checked.dedup_key,
        created_by: req.created_by,
    })
}

/// A PATCH: `patch`'s fields over `current` (the stored schedule as its writable fields).
pub fn merge_patch(current: &Value, patch: &Value) -> Result<Value, ApiError> {
    let Some(fields) = patch.as_object() else {
        return Err(not_an_object());
    };
    let mut merged = current.clone();
    for (key, value) in fields {
        merged[key] = value.clone();
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reject(body: Value) -> (u16, &'static str, Option<String>) {
        let e = validate_schedule(&body, None).expect_err("rejected");
        (e.status, e.code, e.field)
    }

    #[test]
    fn accepts_a_full_schedule() {
        let s = validate_schedule(
            &json!({
                "name": " weather_alerts ",
                "description": "NWS alerts",
                "type": "http",
                "payload": {"url": "https://app.example/weather?kind=alerts"},
                "cron_expression": "*/15 * * * *",
                "priority": 20,
                "max_attempts": 3,
                "dedup_key": "weather-alerts",
                "created_by": "ops"
            }),
            None,
        )
        .unwrap();
        assert_eq!(s.name, "weather_alerts");
        assert_eq!(s.job_type, JobType::HTTP);
        assert_eq!(
            s.payload,
            r#"{"url":"https://app.example/weather?kind=alerts"}"#
        );
        assert!(s.enabled);
        assert_eq!((s.priority, s.max_attempts), (20, Some(3)));
        assert_eq!(s.dedup_key.as_deref(), Some("weather-alerts"));
    }

    #[test]
    fn defaults() {
        let s = validate_schedule(
            &json!({"name": "n", "type": "noop", "cron_expression": "@hourly"}),
            None,
        )
        .unwrap();
        assert_eq!(
            (s.payload.as_str(), s.priority, s.max_attempts, s.enabled),
            ("{}", 0, None, true)
        );
    }

    #[test]
    fn errors_name_the_field() {
        let f = |s: &str| Some(s.to_string());
        let ok = json!({"name": "n", "type": "noop", "cron_expression": "@hourly"});
        let with = |key: &str, value: Value| {
            let mut body = ok.clone();
            body[key] = value;
            body
        };
        assert_eq!(reject(json!([])), (400, "invalid_body", None));
        assert_eq!(
            reject(json!({"type": "noop", "cron_expression": "@daily"})),
            (422, "invalid_field", f("name"))
        );
        for name in [
            "", "   ", "1", "0042", "-1", "+7", ".", "..", "my sched", "café", "a/b", "a?b",
            "a%20b",
        ] {
            assert_eq!(
                reject(with("name", json!(name))),
                (422, "invalid_field", f("name")),
                "{name:?}"
            );
        }
        let long = "n".repeat(101);
        assert_eq!(
            reject(with("name", json!(long))),
            (422, "invalid_field", f("name"))
        );
        for name in ["rss_feed_refresh", "team-7.digest", "v2", "2fa:reminders"] {
            assert!(
                validate_schedule(&with("name", json!(name)), None).is_ok(),
                "{name}"
            );
        }
        assert_eq!(
            reject(with("cron_expression", json!("61 * * * *"))),
            (422, "invalid_cron", f("cron_expression"))
        );
        assert_eq!(
            reject(with("type", json!("nope"))),
            (422, "unknown_type", f("type"))
        );
        assert_eq!(
            reject(with("payload", json!({"x": 1}))),
            (422, "invalid_payload", f("payload.x"))
        );
        assert_eq!(
            reject(with("priority", json!(101))),
            (422, "out_of_range", f("priority"))
        );
        assert_eq!(
            reject(with("max_attempts", json!(0))),
            (422, "out_of_range", f("max_attempts"))
        );
        assert_eq!(
            reject(with("retry", json!({"policy": "fixed", "table": [0]}))),
            (422, "out_of_range", f("retry.table[0]"))
        );
        assert_eq!(
            reject(with("enabled", json!("yes"))),
            (422, "invalid_field", f("enabled"))
        );
        assert_eq!(
            reject(with("next_run_at", json!(1))),
            (422, "unknown_field", f("next_run_at"))
        );
    }

    #[test]
    fn a_retry_preset_is_stored_with_the_attempts_it_brings() {
        let body =
            json!({"name": "n", "type": "noop", "cron_expression": "@hourly", "retry": "quick"});
        let s = validate_schedule(&body, None).unwrap();
        assert_eq!(s.max_attempts, Some(3));
        let stored = s.retry_policy.expect("stored");
        assert!(stored.contains(r#""base_secs":2"#), "{stored}");
        let body =
            json!({"name": "n", "type": "noop", "cron_expression": "@hourly", "retry": null});
        let s = validate_schedule(&body, None).unwrap();
        assert_eq!((s.max_attempts, s.retry_policy), (None, None));
    }

    #[test]
    fn patch_overlays_fields() {
        let current =
            json!({"name": "n", "type": "noop", "cron_expression": "@hourly", "priority": 1});
        let merged = merge_patch(&current, &json!({"priority": 5, "enabled": false})).unwrap();
        assert_eq!(
            merged,
            json!({"name": "n", "type": "noop", "cron_expression": "@hourly", "priority": 5, "enabled": false})
        );
        assert!(merge_patch(&current, &json!(3)).is_err());
    }
}
