//! Why a capture stopped.

use jobs_shared::retry::error_class::{ErrorClass, JobError};

/// Why a capture stopped: it failed (an attempt), or no browser was free to start it (not one).
pub enum Stop {
    Failed(JobError),
    Busy(JobError),
}

impl From<JobError> for Stop {
    fn from(e: JobError) -> Stop {
        Stop::Failed(e)
    }
}

impl Stop {
    /// An error of the browser service itself (never the target page's): its 429 means no
    /// browser is free.
    pub fn of_service(e: JobError) -> Stop {
        match e.class {
            ErrorClass::RateLimited => Stop::Busy(e),
            _ => Stop::Failed(e),
        }
    }
}
