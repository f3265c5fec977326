//! Small helpers without a domain of their own: time formats, capped bodies, text prefixes,
//! numeric vars,
//! and the Workers' clock and ways onto a queue, into Analytics Engine and across the JS
//! boundary.

#[cfg(feature = "workers")]
pub mod analytics_write;
pub mod body_cap;
#[cfg(feature = "workers")]
pub mod clock;
pub(crate) mod config_var;
#[cfg(feature = "workers")]
pub mod js_json;
#[cfg(feature = "workers")]
pub mod queue_send;
pub mod text_prefix;
pub mod time_fmt;
