//! What both Workers share of the runtime (feature `workers`), at the top of the crate's stack:
//! their clock, and their one way onto a queue, into Analytics Engine and across the JS boundary
//! as one JSON text.

pub mod analytics_write;
pub mod clock;
pub mod faults;
pub mod js_json;
pub mod js_pattern;
pub mod queue_send;
pub mod vars;
