//! A platform fault (D1, a binding, a queue: a `worker::Error`) met by either Worker, in each
//! layer's own error type, so `?` carries it: the one place such a fault becomes an answer.

use crate::observe::log_line::{fault, LogLevel};
use crate::request::api_error::ApiError;
use crate::retry::error_class::{ErrorClass, JobError};

/// A fault of ours or of the platform met while answering a request: logged here, once, in
/// full; answered without its details, as a retryable 503 the client can try again.
pub fn internal(fault_of: &dyn std::fmt::Display) -> ApiError {
    fault(
        LogLevel::Error,
        "api",
        format_args!("internal error: {fault_of}"),
    );
    ApiError::new(
        503,
        "unavailable",
        "a platform service failed; retry the request",
    )
}

impl From<worker::Error> for ApiError {
    fn from(e: worker::Error) -> ApiError {
        internal(&e)
    }
}

/// Under a handler: the platform's fault, which usually passes, so the attempt is retried
/// (`internal`), its message on the run record.
impl From<worker::Error> for JobError {
    fn from(e: worker::Error) -> JobError {
        JobError::new(ErrorClass::Internal, format!("D1: {e}"))
    }
}
