//! Small helpers without a domain of their own, at the bottom of the crate's stack: time
//! formats, capped bodies, text prefixes, numeric vars, and how loud a notice is.

pub mod body_cap;
pub(crate) mod config_var;
pub mod severity;
pub mod text_prefix;
pub mod time_fmt;
