//! A job type as code names it: a small `Copy` handle into the registry's table
//! (crate::job::registry), with thin accessors for each of the row's parts.

use std::fmt;
use std::hash::{Hash, Hasher};

use crate::budget::BudgetSpec;
use crate::job::defined_types;
use crate::job::family::Family;
use crate::job::flow_control::FlowSpec;
use crate::job::payloads::FieldError;
use crate::job::registry::{same_str, Handler, JobTypeDef, ScheduleGate, TypeSpec, TYPES};

/// A registered job type. Equal when named alike.
#[derive(Clone, Copy)]
pub struct JobType(&'static JobTypeDef);

const COUNT: usize = TYPES.len();

impl JobType {
    /// Every registered type, in the table's order.
    pub const ALL: [JobType; COUNT] = {
        let mut all = [JobType(&TYPES[0]); COUNT];
        let mut i = 0;
        while i < COUNT {
            all[i] = JobType(&TYPES[i]);
            i += 1;
        }
        all
    };

    /// The types code refers to by name: the built-in ones. A name the table lacks fails to
    /// compile.
    pub const HTTP: JobType = JobType::named("http");
    pub const NOOP: JobType = JobType::named("noop");
    pub const GROUP: JobType = JobType::named("group");
    pub const CALLBACK: JobType = JobType::named("callback");
    pub const WAIT: JobType = JobType::named("wait");
    pub const RSS_FEED_REFRESH: JobType = JobType::named("rss_feed_refresh");
    pub const LINK_HEALTH_CHECK: JobType = JobType::named("link_health_check");
    pub const AI_TAGGING: JobType = JobType::named("ai_tagging");
    pub const SCREENSHOT_CAPTURE: JobType = JobType::named("screenshot_capture");

    const fn named(name: &str) -> JobType {
        let mut i = 0;
        while i < COUNT {
            if same_str(TYPES[i].name, name) {
                return JobType(&TYPES[i]);
            }
            i += 1;
        }
        panic!("not a registered job type");
    }

    /// A built-in type, or one a team defined (crate::job::defined_types) as this isolate
    /// last read them.
    pub fn parse(s: &str) -> Option<JobType> {
        JobType::built_in(s).or_else(|| defined_types::lookup(s).map(JobType))
    }

    /// Every type this isolate knows: the built-in ones, then the teams' as it last read them
    /// (deleted ones too, whose enqueued jobs still run).
    pub fn known() -> Vec<JobType> {
        let defined = defined_types::all().into_iter().map(JobType);
        JobType::ALL.into_iter().chain(defined).collect()
    }

    /// The built-in type named `s`, if it is one.
    pub fn built_in(s: &str) -> Option<JobType> {
        JobType::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Its flow control per key (crate::job::flow_control); `None` for most types, which
    /// then pay nothing for it.
    pub fn flow(self) -> Option<&'static FlowSpec> {
        self.0.flow.as_ref()
    }

    /// Whether enqueue takes new jobs of it: not a team's type that was deleted, nor one only
    /// the platform writes.
    pub fn accepts_jobs(self) -> bool {
        !self.0.closed
    }

    pub fn as_str(self) -> &'static str {
        self.0.name
    }

    /// Each type is pinned to one family.
    pub fn family(self) -> Family {
        self.0.family
    }

    /// Its default attempts, retry policy and timeout.
    pub fn spec(self) -> &'static TypeSpec {
        &self.0.spec
    }

    pub fn handler(self) -> Handler {
        self.0.handler
    }

    /// When its schedules enqueue it.
    pub fn schedule_gate(self) -> ScheduleGate {
        self.0.scheduled
    }

    /// The monthly spend budget it runs under, if it declares one (crate::budget).
    pub fn budget(self) -> Option<BudgetSpec> {
        self.0.budget
    }

    /// Checks `payload` against the type's payload struct (crate::job::payloads);
    /// the error names the field relative to the payload.
    pub fn validate_payload(self, payload: &serde_json::Value) -> Result<(), FieldError> {
        self.0.payload.check(payload)
    }
}

impl PartialEq for JobType {
    fn eq(&self, other: &JobType) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for JobType {}

impl Hash for JobType {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Debug for JobType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::payload_schema::tests::ENGINE;
    use crate::retry::retry_policy::RetryPolicy;
    use serde_json::json;

    #[test]
    fn names_round_trip_and_are_unique() {
        for t in JobType::ALL {
            assert_eq!(JobType::parse(t.as_str()), Some(t));
        }
        let mut names: Vec<_> = JobType::ALL.iter().map(|t| t.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 9);
        assert_eq!(JobType::parse("RSS_FEED_REFRESH"), None);
    }

    #[test]
    fn families_as_the_readme_lists_them() {
        let in_family = |f| {
            JobType::ALL
                .into_iter()
                .filter(|t| t.family() == f)
                .map(JobType::as_str)
                .collect::<Vec<_>>()
        };
        assert!(in_family(Family::High).is_empty());
        assert_eq!(
            in_family(Family::Default),
            [
                "rss_feed_refresh",
                "http",
                "noop",
                "group",
                "wait",
                "callback"
            ]
        );
        assert_eq!(in_family(Family::Screenshot), ["screenshot_capture"]);
        assert_eq!(in_family(Family::Low), ["link_health_check"]);
        assert_eq!(in_family(Family::Bulk), ["ai_tagging"]);
    }

    #[test]
    fn specs() {
        let rss = JobType::RSS_FEED_REFRESH.spec();
        assert_eq!(
            *rss,
            TypeSpec {
                max_attempts: 5,
                retry: RetryPolicy::DEFAULT,
                timeout_ms: 60_000,
                payload_timeout: false,
                max_result_bytes: crate::job::stored_result::MAX_RESULT_BYTES,
            }
        );
        let ai = JobType::AI_TAGGING.spec();
        assert_eq!((ai.max_attempts, ai.retry), (4, RetryPolicy::FIXED_TABLE));
        assert_eq!(ai.timeout_ms, 300_000);
        assert_eq!(
            JobType::LINK_HEALTH_CHECK.spec().retry,
            RetryPolicy::CRAWLER
        );
        assert_eq!(JobType::HTTP.spec().timeout_ms, 30_000);
        assert_eq!(JobType::SCREENSHOT_CAPTURE.spec().timeout_ms, 60_000);
        for t in JobType::ALL {
            assert!(
                t.spec().max_attempts >= 1 && t.spec().timeout_ms > 0,
                "{t:?}"
            );
        }
    }

    #[test]
    fn handlers_and_endpoints() {
        let module = |t: JobType| t.handler().module();
        assert_eq!(module(JobType::HTTP), "http");
        assert!(!JobType::NOOP.handler().calls_out());
        // The core forwards nothing of its own: forwarded types are data (the catalog).
        assert!(JobType::ALL
            .into_iter()
            .all(|t| !matches!(t.handler(), Handler::Forward(_))));
        assert_eq!(module(JobType::LINK_HEALTH_CHECK), "link_health");
        assert_eq!(module(JobType::RSS_FEED_REFRESH), "rss_refresh");
        assert_eq!(module(JobType::AI_TAGGING), "ai_tagging");
        assert_eq!(module(JobType::SCREENSHOT_CAPTURE), "screenshot");
        assert_eq!(module(JobType::GROUP), "group");
        let local = [JobType::NOOP, JobType::GROUP, JobType::WAIT];
        assert!(JobType::ALL
            .into_iter()
            .filter(|t| !local.contains(t))
            .all(|t| t.handler().calls_out()));
        let budgeted: Vec<_> = JobType::ALL
            .into_iter()
            .filter_map(|t| t.budget().map(|b| (t, b)))
            .collect();
        assert_eq!(
            budgeted,
            [(
                JobType::AI_TAGGING,
                BudgetSpec {
                    default_limit_cents: 50_000
                }
            )]
        );
    }

    #[test]
    fn validate_payload_dispatches_to_the_type() {
        assert_eq!(JobType::NOOP.validate_payload(&json!({})), Ok(()));
        assert_eq!(
            JobType::HTTP
                .validate_payload(&json!({}))
                .unwrap_err()
                .field,
            "url"
        );
        // Each type accepts its own minimal payload and rejects a stranger's field.
        for t in JobType::ALL {
            let minimal = match t.as_str() {
                "screenshot_capture" | "http" => json!({"url": "https://a.io"}),
                "group" => json!({"jobs": [{"type": "noop"}]}),
                "callback" => json!({"target": {"url": "https://a.io"}}),
                "wait" => json!({"event": "e", "key": "k"}),
                _ => json!({}),
            };
            assert_eq!(t.validate_payload(&minimal), Ok(()), "{t:?}");
            let mut extra = minimal.clone();
            extra["zzz"] = json!(1);
            assert_eq!(
                t.validate_payload(&extra).unwrap_err().field,
                "zzz",
                "{t:?}"
            );
        }
    }

    // A team's own types, as crate::job::defined_types installs them.
    fn row(name: &str, version: i64, family: &str, deleted: bool) -> defined_types::DefinedRow {
        defined_types::DefinedRow {
            name: name.into(),
            version,
            definition: format!(r#"{{"family":"{family}","target":{{"url":"https://a.io"}}}}"#),
            deleted,
        }
    }

    #[test]
    fn parse_finds_what_was_installed_until_it_is_replaced() {
        assert!(defined_types::stale(0));
        assert_eq!(JobType::parse("send_invoice"), None);
        let broken = defined_types::install_all(
            vec![
                row("send_invoice", 1, "default", false),
                row("old", 1, "nope", false),
            ],
            1_000,
            ENGINE,
        );
        assert_eq!(broken, ["old"]);
        let t = JobType::parse("send_invoice").unwrap();
        assert_eq!(t.family().as_str(), "default");
        assert!(
            !defined_types::stale(1_000 + defined_types::REFRESH_MS - 1)
                && defined_types::stale(1_000 + defined_types::REFRESH_MS)
        );

        // The same version keeps its row; a new one replaces it.
        defined_types::install_all(
            vec![row("send_invoice", 1, "default", false)],
            7_000,
            ENGINE,
        );
        assert!(std::ptr::eq(
            JobType::parse("send_invoice").unwrap().spec(),
            t.spec()
        ));
        defined_types::install_one(row("send_invoice", 2, "low", false), ENGINE);
        assert_eq!(
            JobType::parse("send_invoice").unwrap().family().as_str(),
            "low"
        );

        // Deleted: still found (its jobs run), no longer taking jobs; gone once the table lacks it.
        defined_types::install_one(row("send_invoice", 3, "low", true), ENGINE);
        assert!(!JobType::parse("send_invoice").unwrap().accepts_jobs());
        defined_types::install_all(Vec::new(), 9_000, ENGINE);
        assert_eq!(JobType::parse("send_invoice"), None);
        assert_eq!(JobType::parse("http"), Some(JobType::HTTP));
    }
}
