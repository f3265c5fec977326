//! Plain-Rust core of the job platform, shared by the producer and consumer
//! Workers: the job type registry, validation, the state machine, retry and
//! error policy, auth and signing. No Workers types, I/O, clock or RNG: time
//! comes in as Unix ms and randomness as a unit float, so everything here is
//! tested natively and builds for `wasm32-unknown-unknown` alike. The one exception is
//! `queue_send` (feature `workers`, which only the Workers enable): both Workers' way onto a
//! queue, kept here so it is written once.

pub mod actor;
pub mod ai_tags;
pub mod alert_rules;
pub mod api_error;
pub mod auth;
pub mod body_cap;
pub mod budget;
pub mod bulk_request;
pub mod chain;
mod config_var;
pub mod correlation;
pub mod cron_schedule;
pub mod d1_retry;
pub mod d1_stats;
pub mod enqueue;
pub mod envelope;
pub mod error_class;
pub mod escalation;
pub mod execution_histogram;
pub mod family;
pub mod feed;
pub mod field_error;
pub mod ids;
pub mod image_size;
pub mod job_event;
pub mod job_filter;
pub mod job_outcome;
pub mod job_type;
pub mod lease;
pub mod lifecycle;
pub mod link_health;
pub mod llm_messages;
pub mod operator_action;
pub mod page_cursor;
pub mod pause;
pub mod payloads;
pub mod prometheus;
#[cfg(feature = "workers")]
pub mod queue_send;
pub mod retry_policy;
pub mod route;
pub mod schedule_spec;
pub mod screenshot;
pub mod signature;
pub mod stored_result;
pub mod sweep_policy;
pub mod time_fmt;

pub use actor::*;
pub use ai_tags::*;
pub use api_error::*;
pub use auth::*;
pub use body_cap::*;
pub use budget::*;
pub use bulk_request::*;
pub use chain::*;
pub use cron_schedule::*;
pub use d1_retry::*;
pub use d1_stats::*;
pub use enqueue::*;
pub use envelope::*;
pub use error_class::*;
pub use family::*;
pub use feed::*;
pub use field_error::*;
pub use ids::*;
pub use image_size::*;
pub use job_filter::*;
pub use job_outcome::*;
pub use job_type::*;
pub use lifecycle::*;
pub use link_health::*;
pub use llm_messages::*;
pub use operator_action::*;
pub use pause::*;
pub use payloads::*;
pub use retry_policy::*;
pub use schedule_spec::*;
pub use screenshot::*;
pub use signature::*;
pub use sweep_policy::*;
pub use time_fmt::*;
