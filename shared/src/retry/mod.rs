//! How failures are told apart and retried: error classes, the retry policies and their
//! delays, and the waits for D1 itself.

pub mod d1_retry;
pub mod error_class;
pub mod retry_policy;
