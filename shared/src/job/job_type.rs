//! The job type registry: for each type its name, family, payload, attempts,
//! retry policy, timeout and handler. Adding a type means adding it here.

use crate::budget::BudgetSpec;
use crate::job::family::Family;
use crate::job::payloads::{self, *};
use crate::retry::retry_policy::RetryPolicy;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobType {
    RssFeedRefresh,
    WeatherRefresh,
    ListingExpiration,
    RankRecalculation,
    InboundEmail,
    StockRefresh,
    MessageRelay,
    SocialRefresh,
    LinkHealthCheck,
    SitemapGeneration,
    ClickRollup,
    AiTagging,
    ImageProcessing,
    ScreenshotCapture,
    /// Built in: deliver one HTTP request (payload: [`HttpPayload`]).
    Http,
    /// Built in: does nothing, for benchmarks and pipeline tests.
    Noop,
}

/// How a type's defaults retry and time out. Enqueue may override `max_attempts`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TypeSpec {
    pub max_attempts: u32,
    pub retry: RetryPolicy,
    pub timeout_ms: u32,
}

impl TypeSpec {
    /// Seed 000's default: exponential from 30 s, 5 attempts.
    const fn standard(timeout_ms: u32) -> TypeSpec {
        TypeSpec {
            max_attempts: 5,
            retry: RetryPolicy::DEFAULT,
            timeout_ms,
        }
    }

    /// Seed 002's crawler policy (1 min doubling, capped at 24 h). Its default of
    /// 3 retries is 4 attempts; the cap matters when enqueue raises max_attempts.
    const fn crawler(timeout_ms: u32) -> TypeSpec {
        TypeSpec {
            max_attempts: 4,
            retry: RetryPolicy::CRAWLER,
            timeout_ms,
        }
    }
}

/// Who runs a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handler {
    /// The platform sends the payload's request itself.
    Http,
    /// The platform does nothing (and succeeds).
    Noop,
    /// Delivered as a signed request to the owning app's endpoint, named by the
    /// env var [`JobType::env_key`].
    Forward,
    /// Built in: RSS/Atom refresh into D1 (seed 000 section 10).
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
}

impl JobType {
    pub const ALL: [JobType; 16] = [
        JobType::RssFeedRefresh,
        JobType::WeatherRefresh,
        JobType::ListingExpiration,
        JobType::RankRecalculation,
        JobType::InboundEmail,
        JobType::StockRefresh,
        JobType::MessageRelay,
        JobType::SocialRefresh,
        JobType::LinkHealthCheck,
        JobType::SitemapGeneration,
        JobType::ClickRollup,
        JobType::AiTagging,
        JobType::ImageProcessing,
        JobType::ScreenshotCapture,
        JobType::Http,
        JobType::Noop,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobType::RssFeedRefresh => "rss_feed_refresh",
            JobType::WeatherRefresh => "weather_refresh",
            JobType::ListingExpiration => "listing_expiration",
            JobType::RankRecalculation => "rank_recalculation",
            JobType::InboundEmail => "inbound_email",
            JobType::StockRefresh => "stock_refresh",
            JobType::MessageRelay => "message_relay",
            JobType::SocialRefresh => "social_refresh",
            JobType::LinkHealthCheck => "link_health_check",
            JobType::SitemapGeneration => "sitemap_generation",
            JobType::ClickRollup => "click_rollup",
            JobType::AiTagging => "ai_tagging",
            JobType::ImageProcessing => "image_processing",
            JobType::ScreenshotCapture => "screenshot_capture",
            JobType::Http => "http",
            JobType::Noop => "noop",
        }
    }

    pub fn parse(s: &str) -> Option<JobType> {
        JobType::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Seed 000's registry table; each type is pinned to one family.
    pub fn family(self) -> Family {
        match self {
            JobType::StockRefresh | JobType::MessageRelay => Family::High,
            JobType::RssFeedRefresh
            | JobType::WeatherRefresh
            | JobType::ListingExpiration
            | JobType::RankRecalculation
            | JobType::InboundEmail
            | JobType::Http
            | JobType::Noop => Family::Default,
            JobType::ScreenshotCapture => Family::Screenshot,
            JobType::SocialRefresh
            | JobType::LinkHealthCheck
            | JobType::SitemapGeneration
            | JobType::ClickRollup => Family::Low,
            JobType::AiTagging | JobType::ImageProcessing => Family::Bulk,
        }
    }

    /// Defaults per type. Seed 000's policy everywhere except:
    /// - `social_refresh` and `link_health_check` crawl third-party sites and
    ///   APIs that rate-limit for long stretches, so they use seed 002's crawler
    ///   policy (longer, capped waits);
    /// - `ai_tagging` calls an LLM, like seed 004's LLM queue, and uses its fixed
    ///   table (30 s, 2 min, 10 min, then dead: 4 attempts).
    ///
    /// Timeouts bound one attempt: short for API calls that serve the HIGH SLA,
    /// long for batch work (tagging, sitemaps, whole-directory link checks).
    pub fn spec(self) -> &'static TypeSpec {
        match self {
            JobType::RssFeedRefresh => &const { TypeSpec::standard(60_000) },
            JobType::WeatherRefresh => &const { TypeSpec::standard(30_000) },
            JobType::ListingExpiration => &const { TypeSpec::standard(120_000) },
            JobType::RankRecalculation => &const { TypeSpec::standard(120_000) },
            JobType::InboundEmail => &const { TypeSpec::standard(60_000) },
            JobType::StockRefresh => &const { TypeSpec::standard(30_000) },
            JobType::MessageRelay => &const { TypeSpec::standard(30_000) },
            JobType::SocialRefresh => &const { TypeSpec::crawler(60_000) },
            JobType::LinkHealthCheck => &const { TypeSpec::crawler(300_000) },
            JobType::SitemapGeneration => &const { TypeSpec::standard(300_000) },
            JobType::ClickRollup => &const { TypeSpec::standard(120_000) },
            JobType::AiTagging => {
                &const {
                    TypeSpec {
                        max_attempts: 4,
                        retry: RetryPolicy::FIXED_TABLE,
                        timeout_ms: 300_000,
                    }
                }
            }
            JobType::ImageProcessing => &const { TypeSpec::standard(120_000) },
            JobType::ScreenshotCapture => &const { TypeSpec::standard(60_000) },
            JobType::Http => &const { TypeSpec::standard(30_000) },
            JobType::Noop => &const { TypeSpec::standard(10_000) },
        }
    }

    /// Env var naming the app endpoint a forwarded type is delivered to,
    /// e.g. `ENDPOINT_RSS_FEED_REFRESH`.
    pub fn env_key(self) -> String {
        format!("ENDPOINT_{}", self.as_str().to_ascii_uppercase())
    }

    pub fn handler(self) -> Handler {
        match self {
            JobType::Http => Handler::Http,
            JobType::Noop => Handler::Noop,
            JobType::RssFeedRefresh => Handler::RssRefresh,
            JobType::LinkHealthCheck => Handler::LinkHealth,
            JobType::AiTagging => Handler::AiTagging,
            JobType::ScreenshotCapture => Handler::Screenshot,
            _ => Handler::Forward,
        }
    }

    /// The monthly spend budget a type runs under, if it declares one (seed 000 P10: AI
    /// tagging, $500 a month). See [`crate::budget`].
    pub fn budget(self) -> Option<BudgetSpec> {
        match self {
            JobType::AiTagging => Some(BudgetSpec {
                default_limit_cents: 50_000,
            }),
            _ => None,
        }
    }

    /// Checks `payload` against the type's payload struct (see [`payloads`]);
    /// the error names the field relative to the payload.
    pub fn validate_payload(self, payload: &serde_json::Value) -> Result<(), FieldError> {
        use payloads::validate;
        match self {
            JobType::RssFeedRefresh => validate::<RssFeedRefreshPayload>(payload),
            JobType::WeatherRefresh => validate::<WeatherRefreshPayload>(payload),
            JobType::ListingExpiration => validate::<ListingExpirationPayload>(payload),
            JobType::RankRecalculation => validate::<RankRecalculationPayload>(payload),
            JobType::InboundEmail => validate::<InboundEmailPayload>(payload),
            JobType::StockRefresh => validate::<StockRefreshPayload>(payload),
            JobType::MessageRelay => validate::<MessageRelayPayload>(payload),
            JobType::SocialRefresh => validate::<SocialRefreshPayload>(payload),
            JobType::LinkHealthCheck => validate::<LinkHealthCheckPayload>(payload),
            JobType::SitemapGeneration => validate::<SitemapGenerationPayload>(payload),
            JobType::ClickRollup => validate::<ClickRollupPayload>(payload),
            JobType::AiTagging => validate::<AiTaggingPayload>(payload),
            JobType::ImageProcessing => validate::<ImageProcessingPayload>(payload),
            JobType::ScreenshotCapture => validate::<ScreenshotCapturePayload>(payload),
            JobType::Http => validate::<HttpPayload>(payload),
            JobType::Noop => validate::<NoopPayload>(payload),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_round_trip_and_are_unique() {
        for t in JobType::ALL {
            assert_eq!(JobType::parse(t.as_str()), Some(t));
        }
        let mut names: Vec<_> = JobType::ALL.iter().map(|t| t.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 16);
        assert_eq!(JobType::parse("RSS_FEED_REFRESH"), None);
    }

    #[test]
    fn families_follow_seed_000() {
        let in_family = |f| {
            JobType::ALL
                .into_iter()
                .filter(|t| t.family() == f)
                .map(JobType::as_str)
                .collect::<Vec<_>>()
        };
        assert_eq!(in_family(Family::High), ["stock_refresh", "message_relay"]);
        assert_eq!(
            in_family(Family::Default),
            [
                "rss_feed_refresh",
                "weather_refresh",
                "listing_expiration",
                "rank_recalculation",
                "inbound_email",
                "http",
                "noop"
            ]
        );
        assert_eq!(in_family(Family::Screenshot), ["screenshot_capture"]);
        assert_eq!(
            in_family(Family::Low),
            [
                "social_refresh",
                "link_health_check",
                "sitemap_generation",
                "click_rollup"
            ]
        );
        assert_eq!(in_family(Family::Bulk), ["ai_tagging", "image_processing"]);
    }

    #[test]
    fn specs() {
        let rss = JobType::RssFeedRefresh.spec();
        assert_eq!(
            *rss,
            TypeSpec {
                max_attempts: 5,
                retry: RetryPolicy::DEFAULT,
                timeout_ms: 60_000
            }
        );
        let ai = JobType::AiTagging.spec();
        assert_eq!((ai.max_attempts, ai.retry), (4, RetryPolicy::FIXED_TABLE));
        assert_eq!(ai.timeout_ms, 300_000);
        assert_eq!(JobType::LinkHealthCheck.spec().retry, RetryPolicy::CRAWLER);
        assert_eq!(JobType::SocialRefresh.spec().retry, RetryPolicy::CRAWLER);
        assert_eq!(JobType::Http.spec().timeout_ms, 30_000);
        assert_eq!(JobType::ScreenshotCapture.spec().timeout_ms, 60_000);
        for t in JobType::ALL {
            assert!(
                t.spec().max_attempts >= 1 && t.spec().timeout_ms > 0,
                "{t:?}"
            );
        }
    }

    #[test]
    fn handlers_and_endpoints() {
        assert_eq!(JobType::Http.handler(), Handler::Http);
        assert_eq!(JobType::Noop.handler(), Handler::Noop);
        let forwarded = JobType::ALL
            .into_iter()
            .filter(|t| t.handler() == Handler::Forward)
            .count();
        assert_eq!(forwarded, 10);
        assert_eq!(JobType::LinkHealthCheck.handler(), Handler::LinkHealth);
        assert_eq!(JobType::RssFeedRefresh.handler(), Handler::RssRefresh);
        assert_eq!(JobType::AiTagging.handler(), Handler::AiTagging);
        assert_eq!(JobType::ScreenshotCapture.handler(), Handler::Screenshot);
        let budgeted: Vec<_> = JobType::ALL
            .into_iter()
            .filter_map(|t| t.budget().map(|b| (t, b)))
            .collect();
        assert_eq!(
            budgeted,
            [(
                JobType::AiTagging,
                BudgetSpec {
                    default_limit_cents: 50_000
                }
            )]
        );
        assert_eq!(
            JobType::RssFeedRefresh.env_key(),
            "ENDPOINT_RSS_FEED_REFRESH"
        );
        assert_eq!(JobType::AiTagging.env_key(), "ENDPOINT_AI_TAGGING");
    }

    #[test]
    fn validate_payload_dispatches_to_the_type() {
        assert_eq!(JobType::Noop.validate_payload(&json!({})), Ok(()));
        assert_eq!(
            JobType::Http
                .validate_payload(&json!({}))
                .unwrap_err()
                .field,
            "url"
        );
        assert_eq!(
            JobType::MessageRelay
                .validate_payload(&json!({"message_id": "m"}))
                .map_err(|e| e.field),
            Ok(())
        );
        // Each type accepts its own minimal payload and rejects a stranger's field.
        for t in JobType::ALL {
            let minimal = match t {
                JobType::MessageRelay => json!({"message_id": "m"}),
                JobType::ImageProcessing => json!({"image_key": "k"}),
                JobType::ScreenshotCapture | JobType::Http => json!({"url": "https://a.io"}),
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
}
