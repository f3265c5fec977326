//! The platform's SQL: one module per D1 table, each query a function named for what it does
//! (`jobs::job_insert_many`, `jobs::job_claim`...). Both Workers reach D1 only through here, so a
//! table's statements are read in one place. Dependencies point one way: the domain in
//! `jobs-shared` <- this crate <- the Workers (ARCHITECTURE.md).
//!
//! A function either runs its statements (one round trip, one batch) or returns prepared
//! statements for the caller to batch with others, so a request or a consumer batch keeps its
//! round trips whatever tables it touches.
//!
//! Statuses are written out in each statement's literal (`checked.rs`), not bound, so the
//! partial indexes over `status` (`jobs_dedup_live`, `jobs_escalation_due`) still match the
//! statements that need them, and `tests/status_moves.rs` holds every status write to the
//! state machine (shared `job::lifecycle`).

#[macro_use]
mod checked;

pub mod alerts;
pub mod attempts;
pub mod audit;
pub mod budget_alerts;
pub mod budgets;
pub mod d1;
pub mod dead_letters;
pub mod escalation_digests;
pub mod execution_histogram;
pub mod feed_items;
pub mod flow_keys;
pub mod invocations;
pub mod job_minutes;
pub mod job_runs;
pub mod job_types;
pub mod jobs;
pub mod links;
pub mod metric_counters;
pub mod pauses;
pub mod rss_sources;
pub mod schedules;
pub mod sql;
pub mod success_batches;
