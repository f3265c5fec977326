//! The registry of built-in types as data: one row per type the platform runs itself, declared
//! once in [`TYPES`], with every part a type has (name, family, attempts, retry policy, timeout,
//! payload check, example payload, budget, handler). `JobType` (crate::job::job_type) is a handle
//! into this table or into a type defined as data (crate::job::type_definition), which becomes a
//! row of the same shape. Adding a built-in type is adding a row here (docs/development.md "Adding
//! a job type"); the test below walks every row.

use serde_json::Value;
use std::ops::RangeInclusive;

use crate::budget::BudgetSpec;
use crate::job::callback;
use crate::job::family::Family;
use crate::job::flow_control::FlowSpec;
use crate::job::payload_schema::PayloadSchema;
use crate::job::payloads::{self, validate, FieldError};
use crate::job::stored_result::MAX_RESULT_BYTES;
use crate::job::target::Endpoint;
use crate::job::workflow_group::{GroupPayload, MAX_REPORT_BYTES};
use crate::job::workflow_wait::WaitPayload;
use crate::retry::retry_policy::RetryPolicy;

/// The attempts a type's row or a job at enqueue may allow.
pub const MAX_ATTEMPTS: RangeInclusive<i64> = 1..=100;

/// One job type: everything the platform needs to accept, route, run and retry it.
#[derive(Debug)]
pub struct JobTypeDef {
    /// The wire name (`type` in requests, rows and messages): unique, snake_case.
    pub name: &'static str,
    /// The queue family it is pinned to.
    pub family: Family,
    /// How it retries and times out by default.
    pub spec: TypeSpec,
    /// How a payload is checked, naming the field at fault relative to the payload.
    pub payload: PayloadCheck,
    /// A minimal valid payload (JSON), for tests and documentation.
    pub example: &'static str,
    /// The monthly spend budget its runs draw on: a handler that spends (`HandlerRun::cost_cents`
    /// in the consumer) reads it from its type; `None` for the others.
    pub budget: Option<BudgetSpec>,
    /// Who runs it.
    pub handler: Handler,
    /// When its schedules enqueue it.
    pub scheduled: ScheduleGate,
    /// Enqueue refuses new jobs of it, while those already written still run: a team's type that
    /// was deleted (crate::job::defined_types), or `callback`, whose jobs only the platform
    /// writes (crate::job::callback).
    pub closed: bool,
    /// Its flow control per key, if it has any (crate::job::flow_control).
    pub flow: Option<FlowSpec>,
}

/// How a type's payloads are checked at enqueue.
#[derive(Debug)]
pub enum PayloadCheck {
    /// Against the type's payload struct (crate::job::payloads): `validate::<ItsPayload>`.
    Struct(fn(&Value) -> Result<(), FieldError>),
    /// Against the schema a team gave its own type (crate::job::payload_schema).
    Schema(PayloadSchema),
    /// Any JSON object: a team's type defined without a schema.
    AnyObject,
}

impl PayloadCheck {
    pub fn check(&self, payload: &Value) -> Result<(), FieldError> {
        match self {
            PayloadCheck::Struct(validate) => validate(payload),
            PayloadCheck::Schema(schema) => schema.check(payload),
            PayloadCheck::AnyObject if payload.is_object() => Ok(()),
            PayloadCheck::AnyObject => Err(FieldError::new("", "must be an object")),
        }
    }
}

/// How a type's defaults retry and time out (docs/app-guide.md "Retries"). Enqueue may override
/// `max_attempts`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TypeSpec {
    pub max_attempts: u32,
    pub retry: RetryPolicy,
    /// One attempt's bound: short for API calls that serve the high family's SLA, long for
    /// batch work (tagging, whole-directory link checks).
    pub timeout_ms: u32,
    /// Whether a payload's own `timeout_ms` replaces `timeout_ms` for its job's deadline (up to
    /// `payloads::MAX_PAYLOAD_TIMEOUT_MS`).
    pub payload_timeout: bool,
    /// The largest result a job keeps (crate::job::stored_result): a remote's answer is cut at
    /// `MAX_RESULT_BYTES`; a group's report of its branches, built from stored results, may be
    /// larger (crate::job::workflow_group).
    pub max_result_bytes: usize,
}

impl TypeSpec {
    /// The default policy, 5 attempts.
    pub(crate) const fn standard(timeout_ms: u32) -> TypeSpec {
        TypeSpec {
            max_attempts: 5,
            retry: RetryPolicy::DEFAULT,
            timeout_ms,
            payload_timeout: false,
            max_result_bytes: MAX_RESULT_BYTES,
        }
    }

    /// For types that crawl third-party sites and APIs that rate-limit for long stretches:
    /// longer, capped waits. 4 attempts; the cap matters when enqueue raises `max_attempts`.
    const fn crawler(timeout_ms: u32) -> TypeSpec {
        TypeSpec {
            max_attempts: 4,
            retry: RetryPolicy::CRAWLER,
            timeout_ms,
            payload_timeout: false,
            max_result_bytes: MAX_RESULT_BYTES,
        }
    }

    /// Its payload's `timeout_ms`, when given, bounds the job instead.
    const fn with_payload_timeout(self) -> TypeSpec {
        TypeSpec {
            payload_timeout: true,
            ..self
        }
    }
}

/// When a type's schedules enqueue it (docs/app-guide.md "AI tagging and budgets",
/// docs/operating.md "Schedules API"): each time one is due, or only when there is work for it,
/// checked in the schedule's own write (no extra round trip).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleGate {
    Always,
    /// Only while untagged feed items exist; the job's payload gets their count
    /// (`untagged_count`).
    UntaggedFeedItems,
}

/// Who runs a type. A built-in handler is the consumer's module of that name: the file
/// `consumer/src/handlers/<module>.rs` (or `<module>/mod.rs`). The consumer's build finds those
/// files and checks them against this table ([`check_handler_modules`]), so a row whose module
/// has no file, or a file no row names, does not compile (docs/development.md "Adding a job type").
/// Every type defined as data (crate::job::type_definition) is forwarded: the module
/// [`FORWARD_MODULE`] runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handler {
    /// Delivered as a signed request to the owning app's endpoint (the consumer's `forward`
    /// module).
    Forward(Endpoint<'static>),
    /// Run by the platform itself.
    BuiltIn {
        /// The consumer module that runs it, named in job logs.
        module: &'static str,
        /// Whether it makes subrequests: a job that does is not started once the invocation
        /// has spent them (docs/guarantees.md "Guarantees and how they hold").
        calls_out: bool,
    },
}

impl Handler {
    /// A built-in handler that calls out (most do).
    pub const fn built_in(module: &'static str) -> Handler {
        Handler::BuiltIn {
            module,
            calls_out: true,
        }
    }

    /// The consumer module that runs it (`consumer::handlers::<module>`).
    pub const fn module(self) -> &'static str {
        match self {
            Handler::Forward(_) => FORWARD_MODULE,
            Handler::BuiltIn { module, .. } => module,
        }
    }

    pub const fn calls_out(self) -> bool {
        match self {
            Handler::Forward(_) => true,
            Handler::BuiltIn { calls_out, .. } => calls_out,
        }
    }
}

/// The consumer module that delivers forwarded types.
pub const FORWARD_MODULE: &str = "forward";

/// Checks, at the consumer's compile time, that `modules` (the consumer's handler files) are
/// exactly the modules the rows name, and [`FORWARD_MODULE`]: each has a file and each file a
/// row (or is the forwarder).
pub const fn check_handler_modules(modules: &[&str]) {
    if !contains(modules, FORWARD_MODULE) {
        panic!("consumer/src/handlers/ has no forward module, which delivers forwarded types");
    }
    let mut i = 0;
    while i < TYPES.len() {
        if !contains(modules, TYPES[i].handler.module()) {
            panic!("a job type's handler module has no file in consumer/src/handlers/");
        }
        i += 1;
    }
    let mut m = 0;
    while m < modules.len() {
        let mut named = same_str(modules[m], FORWARD_MODULE);
        let mut i = 0;
        while i < TYPES.len() {
            named |= same_str(TYPES[i].handler.module(), modules[m]);
            i += 1;
        }
        if !named {
            panic!("a file in consumer/src/handlers/ is no job type's handler");
        }
        m += 1;
    }
}

const fn contains(list: &[&str], name: &str) -> bool {
    let mut i = 0;
    while i < list.len() {
        if same_str(list[i], name) {
            return true;
        }
        i += 1;
    }
    false
}

/// String equality usable in const context.
pub(crate) const fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether `name` is a built-in type's.
pub(crate) fn is_built_in(name: &str) -> bool {
    TYPES.iter().any(|def| def.name == name)
}

/// A type's name: lowercase letters, digits and single underscores, starting with a letter.
pub(crate) fn snake_case(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes.last().is_some_and(|b| *b != b'_')
        && !name.contains("__")
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
}

/// Every built-in type, in the order listings show them. `family` follows docs/app-guide.md "Job
/// types" table; `spec` is the default policy except for the crawler (`link_health_check`) and
/// `ai_tagging`, whose LLM calls use the fixed table.
pub(crate) static TYPES: &[JobTypeDef] = &[
    JobTypeDef {
        name: "rss_feed_refresh",
        family: Family::Default,
        spec: TypeSpec::standard(60_000),
        payload: PayloadCheck::Struct(validate::<payloads::RssFeedRefreshPayload>),
        example: "{}",
        budget: None,
        handler: Handler::built_in("rss_refresh"),
        scheduled: ScheduleGate::Always,
        closed: false,
        flow: None,
    },
    JobTypeDef {
        name: "link_health_check",
        family: Family::Low,
        spec: TypeSpec::crawler(300_000),
        payload: PayloadCheck::Struct(validate::<payloads::LinkHealthCheckPayload>),
        example: "{}",
        budget: None,
        handler: Handler::built_in("link_health"),
        scheduled: ScheduleGate::Always,
        closed: false,
        flow: None,
    },
    JobTypeDef {
        name: "ai_tagging",
        family: Family::Bulk,
        spec: TypeSpec {
            max_attempts: 4,
            retry: RetryPolicy::FIXED_TABLE,
            timeout_ms: 300_000,
            payload_timeout: false,
            max_result_bytes: MAX_RESULT_BYTES,
        },
        payload: PayloadCheck::Struct(validate::<payloads::AiTaggingPayload>),
        example: "{}",
        // $500 a month (docs/app-guide.md "AI tagging and budgets").
        budget: Some(BudgetSpec {
            default_limit_cents: 50_000,
        }),
        handler: Handler::built_in("ai_tagging"),
        scheduled: ScheduleGate::UntaggedFeedItems,
        closed: false,
        flow: None,
    },
    JobTypeDef {
        name: "screenshot_capture",
        family: Family::Screenshot,
        spec: TypeSpec::standard(60_000).with_payload_timeout(),
        payload: PayloadCheck::Struct(validate::<payloads::ScreenshotCapturePayload>),
        example: r#"{"url": "https://example.com"}"#,
        budget: None,
        handler: Handler::built_in("screenshot"),
        scheduled: ScheduleGate::Always,
        closed: false,
        flow: None,
    },
    JobTypeDef {
        name: "http",
        family: Family::Default,
        spec: TypeSpec::standard(30_000).with_payload_timeout(),
        payload: PayloadCheck::Struct(validate::<payloads::HttpPayload>),
        example: r#"{"url": "https://example.com/hook"}"#,
        budget: None,
        handler: Handler::built_in("http"),
        scheduled: ScheduleGate::Always,
        closed: false,
        flow: None,
    },
    JobTypeDef {
        name: "noop",
        family: Family::Default,
        spec: TypeSpec::standard(10_000),
        payload: PayloadCheck::Struct(validate::<payloads::NoopPayload>),
        example: "{}",
        budget: None,
        handler: Handler::BuiltIn {
            module: "noop",
            calls_out: false,
        },
        scheduled: ScheduleGate::Always,
        closed: false,
        flow: None,
    },
    // A workflow's fan-out and fan-in: a chain step only (crate::job::workflow_group).
    JobTypeDef {
        name: "group",
        family: Family::Default,
        spec: TypeSpec {
            max_result_bytes: MAX_REPORT_BYTES,
            ..TypeSpec::standard(10_000)
        },
        payload: PayloadCheck::Struct(GroupPayload::check),
        example: r#"{"jobs": [{"type": "noop"}]}"#,
        budget: None,
        handler: Handler::BuiltIn {
            module: "group",
            calls_out: false,
        },
        scheduled: ScheduleGate::Always,
        closed: false,
        flow: None,
    },
    // A workflow's wait for an event the app posts: a chain step only
    // (crate::job::workflow_wait).
    JobTypeDef {
        name: "wait",
        family: Family::Default,
        spec: TypeSpec::standard(10_000),
        payload: PayloadCheck::Struct(WaitPayload::check),
        example: r#"{"event": "approved", "key": "order-42"}"#,
        budget: None,
        handler: Handler::BuiltIn {
            module: "wait",
            calls_out: false,
        },
        scheduled: ScheduleGate::Always,
        closed: false,
        flow: None,
    },
    // A job's or a chain's end, delivered to its callback (crate::job::callback): written by
    // D1 itself when the job or chain ends, never enqueued.
    JobTypeDef {
        name: "callback",
        family: Family::Default,
        // 10 s doubling over 8 attempts: about 21 minutes from the first to the last.
        spec: TypeSpec {
            max_attempts: 8,
            retry: RetryPolicy::Exponential {
                base_secs: 10,
                jitter_min: 0.75,
                jitter_max: 1.25,
            },
            ..TypeSpec::standard(30_000)
        },
        payload: PayloadCheck::Struct(callback::check_payload),
        example: r#"{"target": {"url": "https://example.com/done"}, "event": "job.ended", "job": {}}"#,
        budget: None,
        handler: Handler::built_in("callback"),
        scheduled: ScheduleGate::Always,
        closed: true,
        flow: None,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// The test that fails when a type lacks a part (docs/development.md "Adding a job type").
    #[test]
    fn every_row_has_every_part() {
        let mut names = HashSet::new();
        for def in TYPES {
            let name = def.name;
            assert!(names.insert(name), "{name}: listed twice");
            assert!(snake_case(name), "{name}: not a snake_case name");

            let example: Value = serde_json::from_str(def.example)
                .unwrap_or_else(|e| panic!("{name}: its example is not JSON: {e}"));
            assert_eq!(def.payload.check(&example), Ok(()), "{name}: its example");
            let mut stranger = example.clone();
            stranger["not_a_field"] = Value::Bool(true);
            assert_eq!(
                def.payload.check(&stranger).map_err(|e| e.field),
                Err("not_a_field".to_string()),
                "{name}: an unknown field must be refused, by name"
            );

            let TypeSpec {
                max_attempts,
                timeout_ms,
                ..
            } = def.spec;
            assert!(
                MAX_ATTEMPTS.contains(&i64::from(max_attempts)),
                "{name}: {max_attempts} attempts is more than enqueue allows"
            );
            assert!(timeout_ms >= 1_000, "{name}: a timeout under 1 s");
            assert!(
                def.family.lease_ms() >= 2 * i64::from(timeout_ms),
                "{name}: its {timeout_ms} ms timeout outlasts half its family's lease"
            );

            assert!(
                def.budget.is_none_or(|b| b.default_limit_cents > 0),
                "{name}: a budget of nothing"
            );
        }
    }

    /// D1's triggers write the callback job as its row says it is, under the id the record
    /// looks it up by (crate::job::callback).
    #[test]
    fn the_triggers_write_the_callback_row_s_job() {
        let migration = include_str!("../../../migrations/0029_callbacks.sql");
        let row = TYPES
            .iter()
            .find(|t| t.name == "callback")
            .expect("its row");
        assert_eq!((row.family, row.spec.max_attempts), (Family::Default, 8));
        let id = format!(
            "VALUES (NEW.id || '{}', 'callback', 'default', 'queued'",
            callback::ID_SUFFIX
        );
        assert_eq!(migration.matches(&id).count(), 2, "{id}");
        let attempts = format!("0, {}, NEW.updated_at", row.spec.max_attempts);
        assert_eq!(migration.matches(&attempts).count(), 2, "{attempts}");
    }

    /// The consumer's build runs this on its handler files; here on lists that lack or add one.
    #[test]
    fn handler_files_must_match_the_rows() {
        let mut modules: Vec<&str> = TYPES.iter().map(|d| d.handler.module()).collect();
        modules.push(FORWARD_MODULE);
        modules.sort_unstable();
        modules.dedup();
        check_handler_modules(&modules);

        let missing: Vec<&str> = modules.iter().copied().filter(|m| *m != "noop").collect();
        let refused = std::panic::catch_unwind(|| check_handler_modules(&missing));
        assert!(refused.is_err(), "a row whose module has no file");
        let no_forwarder: Vec<&str> = modules
            .iter()
            .copied()
            .filter(|m| *m != FORWARD_MODULE)
            .collect();
        let refused = std::panic::catch_unwind(|| check_handler_modules(&no_forwarder));
        assert!(refused.is_err(), "no module delivers the forwarded types");

        let mut stray = modules.clone();
        stray.push("invoice_reminder");
        let refused = std::panic::catch_unwind(|| check_handler_modules(&stray));
        assert!(refused.is_err(), "a file that no row names");
    }

    #[test]
    fn snake_case_names() {
        assert!(snake_case("rss_feed_refresh") && snake_case("http2"));
        for bad in ["", "Http", "rss-feed", "_x", "x_", "a__b", "2fa", "a b"] {
            assert!(!snake_case(bad), "{bad:?}");
        }
    }
}
