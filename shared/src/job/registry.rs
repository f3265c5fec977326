//! The job type registry as data: one row per type, declared once in [`TYPES`], with every part
//! a type has (name, family, attempts, retry policy, timeout, payload check, example payload,
//! budget, handler). `JobType` (crate::job::job_type) is a handle into this table. Adding a
//! type is adding a row here (README "Adding a job type"); the test below walks every row.

use serde_json::Value;

use crate::budget::BudgetSpec;
use crate::job::family::Family;
use crate::job::payloads::{self, validate, FieldError};
use crate::retry::retry_policy::RetryPolicy;

/// One job type: everything the platform needs to accept, route, run and retry it.
#[derive(Debug)]
pub struct JobTypeDef {
    /// The wire name (`type` in requests, rows and messages): unique, snake_case.
    pub name: &'static str,
    /// The queue family it is pinned to.
    pub family: Family,
    /// How it retries and times out by default.
    pub spec: TypeSpec,
    /// Checks a payload against the type's payload struct (crate::job::payloads), naming the
    /// field at fault relative to the payload: `validate::<payloads::ItsPayload>`.
    pub payload: fn(&Value) -> Result<(), FieldError>,
    /// A minimal valid payload (JSON), for tests and documentation.
    pub example: &'static str,
    /// The monthly spend budget it runs under: set exactly when its handler spends.
    pub budget: Option<BudgetSpec>,
    /// Who runs it.
    pub handler: Handler,
}

impl JobTypeDef {
    /// Env var naming the app endpoint a forwarded type is delivered to,
    /// e.g. `ENDPOINT_RSS_FEED_REFRESH`.
    pub fn env_key(&self) -> String {
        format!("ENDPOINT_{}", self.name.to_ascii_uppercase())
    }
}

/// How a type's defaults retry and time out (README "Retries"). Enqueue may override
/// `max_attempts`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TypeSpec {
    pub max_attempts: u32,
    pub retry: RetryPolicy,
    /// One attempt's bound: short for API calls that serve the high family's SLA, long for
    /// batch work (tagging, sitemaps, whole-directory link checks).
    pub timeout_ms: u32,
}

impl TypeSpec {
    /// The default policy, 5 attempts.
    const fn standard(timeout_ms: u32) -> TypeSpec {
        TypeSpec {
            max_attempts: 5,
            retry: RetryPolicy::DEFAULT,
            timeout_ms,
        }
    }

    /// For types that crawl third-party sites and APIs that rate-limit for long stretches:
    /// longer, capped waits. 4 attempts; the cap matters when enqueue raises `max_attempts`.
    const fn crawler(timeout_ms: u32) -> TypeSpec {
        TypeSpec {
            max_attempts: 4,
            retry: RetryPolicy::CRAWLER,
            timeout_ms,
        }
    }
}

/// Who runs a type. The consumer dispatches on it with an exhaustive match
/// (`consumer/src/handlers/mod.rs`), so a variant without a handler does not compile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handler {
    /// The platform sends the payload's request itself.
    Http,
    /// The platform does nothing (and succeeds).
    Noop,
    /// Delivered as a signed request to the owning app's endpoint, named by the
    /// env var [`JobTypeDef::env_key`].
    Forward,
    /// Built in: RSS/Atom refresh into D1 (README "rss_feed_refresh").
    RssRefresh,
    /// Built in: HEAD/GET checks of links, state in D1.
    LinkHealth,
    /// Built in: feed items tagged by an LLM under the type's monthly budget.
    AiTagging,
    /// Built in: a page captured by the Browser Rendering binding (or REST) into R2.
    Screenshot,
}

impl Handler {
    /// The consumer module that runs it (`consumer::handlers::<module>`), named in job logs.
    pub fn module(self) -> &'static str {
        match self {
            Handler::Http => "http",
            Handler::Noop => "noop",
            Handler::Forward => "forward",
            Handler::RssRefresh => "rss_refresh",
            Handler::LinkHealth => "link_health",
            Handler::AiTagging => "ai_tagging",
            Handler::Screenshot => "screenshot",
        }
    }

    /// Whether its runs cost money (`job_runs.cost_cents`), so its type needs a budget.
    pub fn spends(self) -> bool {
        match self {
            Handler::AiTagging => true,
            Handler::Http
            | Handler::Noop
            | Handler::Forward
            | Handler::RssRefresh
            | Handler::LinkHealth
            | Handler::Screenshot => false,
        }
    }
}

/// Every type, in the order listings show them. `family` follows the README's "Job types"
/// table; `spec` is the default policy except for the crawlers (`social_refresh`,
/// `link_health_check`) and `ai_tagging`, whose LLM calls use the fixed table.
pub(crate) static TYPES: &[JobTypeDef] = &[
    JobTypeDef {
        name: "rss_feed_refresh",
        family: Family::Default,
        spec: TypeSpec::standard(60_000),
        payload: validate::<payloads::RssFeedRefreshPayload>,
        example: "{}",
        budget: None,
        handler: Handler::RssRefresh,
    },
    JobTypeDef {
        name: "weather_refresh",
        family: Family::Default,
        spec: TypeSpec::standard(30_000),
        payload: validate::<payloads::WeatherRefreshPayload>,
        example: "{}",
        budget: None,
        handler: Handler::Forward,
    },
    JobTypeDef {
        name: "listing_expiration",
        family: Family::Default,
        spec: TypeSpec::standard(120_000),
        payload: validate::<payloads::ListingExpirationPayload>,
        example: "{}",
        budget: None,
        handler: Handler::Forward,
    },
    JobTypeDef {
        name: "rank_recalculation",
        family: Family::Default,
        spec: TypeSpec::standard(120_000),
        payload: validate::<payloads::RankRecalculationPayload>,
        example: "{}",
        budget: None,
        handler: Handler::Forward,
    },
    JobTypeDef {
        name: "inbound_email",
        family: Family::Default,
        spec: TypeSpec::standard(60_000),
        payload: validate::<payloads::InboundEmailPayload>,
        example: "{}",
        budget: None,
        handler: Handler::Forward,
    },
    JobTypeDef {
        name: "stock_refresh",
        family: Family::High,
        spec: TypeSpec::standard(30_000),
        payload: validate::<payloads::StockRefreshPayload>,
        example: "{}",
        budget: None,
        handler: Handler::Forward,
    },
    JobTypeDef {
        name: "message_relay",
        family: Family::High,
        spec: TypeSpec::standard(30_000),
        payload: validate::<payloads::MessageRelayPayload>,
        example: r#"{"message_id": "msg_1"}"#,
        budget: None,
        handler: Handler::Forward,
    },
    JobTypeDef {
        name: "social_refresh",
        family: Family::Low,
        spec: TypeSpec::crawler(60_000),
        payload: validate::<payloads::SocialRefreshPayload>,
        example: "{}",
        budget: None,
        handler: Handler::Forward,
    },
    JobTypeDef {
        name: "link_health_check",
        family: Family::Low,
        spec: TypeSpec::crawler(300_000),
        payload: validate::<payloads::LinkHealthCheckPayload>,
        example: "{}",
        budget: None,
        handler: Handler::LinkHealth,
    },
    JobTypeDef {
        name: "sitemap_generation",
        family: Family::Low,
        spec: TypeSpec::standard(300_000),
        payload: validate::<payloads::SitemapGenerationPayload>,
        example: "{}",
        budget: None,
        handler: Handler::Forward,
    },
    JobTypeDef {
        name: "click_rollup",
        family: Family::Low,
        spec: TypeSpec::standard(120_000),
        payload: validate::<payloads::ClickRollupPayload>,
        example: "{}",
        budget: None,
        handler: Handler::Forward,
    },
    JobTypeDef {
        name: "ai_tagging",
        family: Family::Bulk,
        spec: TypeSpec {
            max_attempts: 4,
            retry: RetryPolicy::FIXED_TABLE,
            timeout_ms: 300_000,
        },
        payload: validate::<payloads::AiTaggingPayload>,
        example: "{}",
        // $500 a month (README "AI tagging and budgets").
        budget: Some(BudgetSpec {
            default_limit_cents: 50_000,
        }),
        handler: Handler::AiTagging,
    },
    JobTypeDef {
        name: "image_processing",
        family: Family::Bulk,
        spec: TypeSpec::standard(120_000),
        payload: validate::<payloads::ImageProcessingPayload>,
        example: r#"{"image_key": "uploads/1.jpg"}"#,
        budget: None,
        handler: Handler::Forward,
    },
    JobTypeDef {
        name: "screenshot_capture",
        family: Family::Screenshot,
        spec: TypeSpec::standard(60_000),
        payload: validate::<payloads::ScreenshotCapturePayload>,
        example: r#"{"url": "https://example.com"}"#,
        budget: None,
        handler: Handler::Screenshot,
    },
    JobTypeDef {
        name: "http",
        family: Family::Default,
        spec: TypeSpec::standard(30_000),
        payload: validate::<payloads::HttpPayload>,
        example: r#"{"url": "https://example.com/hook"}"#,
        budget: None,
        handler: Handler::Http,
    },
    JobTypeDef {
        name: "noop",
        family: Family::Default,
        spec: TypeSpec::standard(10_000),
        payload: validate::<payloads::NoopPayload>,
        example: "{}",
        budget: None,
        handler: Handler::Noop,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn snake_case(name: &str) -> bool {
        let bytes = name.as_bytes();
        bytes.first().is_some_and(u8::is_ascii_lowercase)
            && bytes.last().is_some_and(|b| *b != b'_')
            && !name.contains("__")
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
    }

    /// The test that fails when a type lacks a part (README "Adding a job type").
    #[test]
    fn every_row_has_every_part() {
        let mut names = HashSet::new();
        for def in TYPES {
            let name = def.name;
            assert!(names.insert(name), "{name}: listed twice");
            assert!(snake_case(name), "{name}: not a snake_case name");

            let example: Value = serde_json::from_str(def.example)
                .unwrap_or_else(|e| panic!("{name}: its example is not JSON: {e}"));
            assert_eq!((def.payload)(&example), Ok(()), "{name}: its example");
            let mut stranger = example.clone();
            stranger["not_a_field"] = Value::Bool(true);
            assert_eq!(
                (def.payload)(&stranger).map_err(|e| e.field),
                Err("not_a_field".to_string()),
                "{name}: an unknown field must be refused, by name"
            );

            let TypeSpec {
                max_attempts,
                timeout_ms,
                ..
            } = def.spec;
            assert!(
                crate::job::enqueue::MAX_ATTEMPTS.contains(&i64::from(max_attempts)),
                "{name}: {max_attempts} attempts is more than enqueue allows"
            );
            assert!(timeout_ms >= 1_000, "{name}: a timeout under 1 s");
            assert!(
                def.family.lease_ms() >= 2 * i64::from(timeout_ms),
                "{name}: its {timeout_ms} ms timeout outlasts half its family's lease"
            );

            assert_eq!(
                def.budget.is_some(),
                def.handler.spends(),
                "{name}: a budget exactly when its handler spends"
            );
            assert!(
                def.budget.is_none_or(|b| b.default_limit_cents > 0),
                "{name}: a budget of nothing"
            );
            if def.handler == Handler::Forward {
                let key = def.env_key();
                assert_eq!(key, format!("ENDPOINT_{}", name.to_uppercase()), "{name}");
                assert!(
                    key.bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
                    "{name}: {key} is not an env var name"
                );
            }
        }
    }

    #[test]
    fn snake_case_names() {
        assert!(snake_case("rss_feed_refresh") && snake_case("http2"));
        for bad in ["", "Http", "rss-feed", "_x", "x_", "a__b", "2fa", "a b"] {
            assert!(!snake_case(bad), "{bad:?}");
        }
    }
}
