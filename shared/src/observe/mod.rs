//! What operators see: job events, metrics, the execution histogram, alert rules and who
//! hears about them, correlation ids, and handlers' own span events.

pub mod alert_rules;
pub mod analytics_points;
pub mod correlation;
pub mod d1_stats;
pub mod escalation;
pub mod execution_histogram;
pub mod job_event;
pub mod job_minutes;
pub mod last_hour;
pub mod log_line;
pub mod prometheus;
pub mod span_events;
