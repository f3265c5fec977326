//! The platform's own log lines (a sweep, a DLQ batch, an alert, a fault it recovered from),
//! beside a job's (`job_event`): one JSON object each, with its `event` and `level`, written at
//! the console level `level` names so Workers Logs filters on both (docs/operating.md "Log
//! schema").

use std::fmt::Display;

use serde_json::{Map, Value};

/// How loud a line is, and the console level it is written at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    Info,
    Warn,
    Error,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        }
    }
}

/// `{"event", "level", ...fields}`; `fields` other than an object add nothing.
pub fn event_line(event: &str, level: LogLevel, fields: Value) -> Value {
    let mut line = Map::new();
    line.insert("event".into(), event.into());
    line.insert("level".into(), level.as_str().into());
    if let Value::Object(fields) = fields {
        line.extend(fields);
    }
    Value::Object(line)
}

/// A fault the Worker recovered from or retries (a write D1 refused, a notification that did
/// not go out) or a setting it ignored: `worker.warning` or `worker.error`, with the part of
/// the platform it happened in (`source`) and what happened.
pub fn fault_line(level: LogLevel, source: &str, message: impl Display) -> Value {
    let event = match level {
        LogLevel::Error => "worker.error",
        LogLevel::Warn | LogLevel::Info => "worker.warning",
    };
    let fields = serde_json::json!({ "source": source, "message": message.to_string() });
    event_line(event, level, fields)
}

/// Writes `line` at the console level its `level` names (`error` or a `critical` alert to
/// console.error, `warn` or `warning` to console.warn, anything else to console.log).
#[cfg(feature = "workers")]
pub fn emit(line: &Value) {
    match line["level"].as_str() {
        Some("error" | "critical") => worker::console_error!("{line}"),
        Some("warn" | "warning") => worker::console_warn!("{line}"),
        _ => worker::console_log!("{line}"),
    }
}

/// Writes a [`fault_line`].
#[cfg(feature = "workers")]
pub fn fault(level: LogLevel, source: &str, message: impl Display) {
    emit(&fault_line(level, source, message));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_line_has_its_event_level_and_fields() {
        let line = event_line("sweep.completed", LogLevel::Info, json!({"rescued": 2}));
        assert_eq!(
            line,
            json!({"event": "sweep.completed", "level": "info", "rescued": 2})
        );
    }

    #[test]
    fn a_fault_says_where_and_what() {
        let line = fault_line(
            LogLevel::Error,
            "sweep",
            format_args!("job_cleaner failed: {}", "D1"),
        );
        assert_eq!(
            line,
            json!({"event": "worker.error", "level": "error", "source": "sweep", "message": "job_cleaner failed: D1"})
        );
        assert_eq!(
            fault_line(LogLevel::Warn, "config", "x")["event"],
            "worker.warning"
        );
    }
}
