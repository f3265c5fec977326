//! How failures are told apart and retried: error classes, the retry policies and their
//! delays, a job's own policy as enqueue chose it, and the waits for D1 itself.

pub mod d1_retry;
pub mod error_class;
pub mod retry_policy;
pub mod retry_request;
