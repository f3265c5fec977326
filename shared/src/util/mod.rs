//! Small helpers without a domain of their own: time formats, capped bodies, numeric vars,
//! and the Workers' ways onto a queue and into Analytics Engine.

#[cfg(feature = "workers")]
pub mod analytics_write;
pub mod body_cap;
pub(crate) mod config_var;
#[cfg(feature = "workers")]
pub mod queue_send;
pub mod time_fmt;
