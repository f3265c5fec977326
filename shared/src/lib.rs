//! Plain-Rust core of the job platform, shared by the producer and consumer Workers: the job
//! type registry, validation, the state machine, retry and error policy, auth and signing. No
//! Workers types, I/O, clock or RNG: time comes in as Unix ms and randomness as a unit float, so
//! everything here is tested natively and builds for `wasm32-unknown-unknown` alike. The one
//! exception is `util::queue_send` (feature `workers`, which only the Workers enable): both
//! Workers' way onto a queue, kept here so it is written once.
//!
//! Modules are grouped by concept (ARCHITECTURE.md has the map); what the Workers use is
//! re-exported below by name.

pub mod api;
pub mod budget;
pub mod handlers;
pub mod job;
pub mod observe;
pub mod retry;
pub mod schedule;
pub mod security;
pub mod util;

pub use api::api_error::ApiError;
pub use api::bulk_request::{BulkRequest, Selection, MAX_BULK};
pub use api::job_filter::{JobFilter, SqlValue};
pub use api::operator_action::{
    check_move, move_sources, only_fields, operator_actions, parse_int, parse_target,
};
pub use budget::{
    alert_level, cents, history_months, month_back, month_of, next_month_start_ms, percent_used,
    validate_limit_change, BudgetAction, BudgetSpec, RaisedAlert, TokenPrices, Usage,
};
pub use handlers::ai_tags::{parse_tags, tagging_prompt, AiTags, TAGGING_SYSTEM_PROMPT};
pub use handlers::feed::{
    after_refresh_failure, fetch_error_type, item_chunks, parse_feed, refresh_decision,
    sort_entries, validate_new_source, validate_source_patch, RefreshDecision, RssLimits,
    SortedEntries, SourceState, MAX_CONSECUTIVE_ERRORS, MAX_FEED_BYTES,
};
pub use handlers::image_size::image_info;
pub use handlers::link_health::{
    after_check, head_refused, healthy, is_redirect, LinkState, LinkStatus, DEFAULT_DEAD_AFTER,
    DEFAULT_LINK_CONCURRENCY, MAX_REDIRECTS,
};
pub use handlers::llm_messages::{
    messages_url, most_a_call_uses, parse_reply, request_body, ANTHROPIC_VERSION,
    DEFAULT_LLM_BASE_URL, DEFAULT_LLM_MODEL,
};
pub use handlers::screenshot::{
    classify_navigation_error, content_type, screenshot_key, screenshot_metadata, BrowserSlots,
    Capture, CaptureMode, DocumentResponse, PageWatch, SETTLE_MS, WATCHED_EVENTS,
};
pub use job::chain::{
    after_death, after_skip, after_success, failed_chain_of_dead_step, failed_chain_of_ended_step,
    follow_ups, ChainMove, ChainPhases, ChainPosition, BODY_TRUNCATED_KEY, FOLLOW_UP_KEY,
};
pub use job::enqueue::{
    check_stored_size, validate_batch, validate_enqueue, validate_steps, NewJob, MAX_PRIORITY,
};
pub use job::envelope::JobMessage;
pub use job::family::{Escalation, Family, Lane, EXPRESS_PRIORITY};
pub use job::ids::{job_id, uuid_v4};
pub use job::job_outcome::{decide, AttemptEnd, Decision};
pub use job::job_type::JobType;
pub use job::lifecycle::{can_transition, sources_of, JobStatus};
pub use job::pause::PauseTarget;
pub use job::payloads::{
    AiTaggingPayload, HttpPayload, LinkHealthCheckPayload, RssFeedRefreshPayload,
    ScreenshotCapturePayload,
};
pub use job::registry::{Handler, ScheduleGate};
pub use job::run_details::{
    artifact_bucket, found_by_consumer, show_omitted, Artifact, Bytes, InvocationDetails, LlmUse,
    Placement, Ran, RunDetails, FOUND_BY_SWEEP,
};
pub use observe::d1_stats::D1Stats;
pub use retry::d1_retry::d1_retry_secs;
pub use retry::error_class::{classify_http_status, delivery_redirected, ErrorClass, JobError};
pub use retry::retry_policy::{plan_delivery_at, DeliveryPlan, QueueDelayLimit, RetryPolicy};
pub use retry::retry_request::JobRetry;
pub use schedule::cron_schedule::{names_zone, CatchUp, CronSchedule};
pub use schedule::schedule_spec::{merge_patch, validate_schedule, ScheduleSpec};
pub use schedule::sweep_policy::{
    SweepBudget, SweepConfig, AGING_AFTER_MS, AGING_EVERY_MS, AGING_STEP,
};
pub use schedule::time_zones::TimeZones;
pub use security::actor::actor_of;
pub use security::auth::{Caller, Scope, TokenSecrets, Tokens};
pub use security::redaction::redact_credentials;
pub use security::signature::{sign, signing_secret, SignedRequest, SIGNATURE_HEADER};
pub use security::type_fence::TypeFence;
pub use util::body_cap::CappedBody;
pub use util::text_prefix::{byte_prefix, char_prefix};
pub use util::time_fmt::rfc3339;
