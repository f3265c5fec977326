//! A batch's outbound gate. A Worker keeps 6 connections open per invocation and queues the
//! rest, so a batch of 100 deliveries would spend most of its timeouts waiting in that queue;
//! and an invocation may make only so many subrequests. Every handler fetch goes through here:
//! it waits for one of the batch's connections before its timeout starts, and a fetch past the
//! subrequest limit fails as retryable instead of being refused by the runtime.

use std::cell::Cell;

use async_lock::{Semaphore, SemaphoreGuard};
use jobs_shared::lease::ConsumerLimits;
use jobs_shared::{ErrorClass, JobError};

pub struct Outbound {
    connections: Semaphore,
    used: Cell<u32>,
    limit: u32,
}

impl Outbound {
    pub fn new(limits: &ConsumerLimits) -> Outbound {
        Outbound {
            connections: Semaphore::new(limits.connections),
            used: Cell::new(0),
            limit: limits.subrequests,
        }
    }

    /// A connection for one subrequest, held until the guard drops (after the body is read).
    pub async fn connection(&self) -> Result<SemaphoreGuard<'_>, JobError> {
        let used = self.used.get();
        if used >= self.limit {
            return Err(JobError::new(
                ErrorClass::Internal,
                format!(
                    "this invocation spent its {} subrequests (SUBREQUEST_LIMIT); retried in another",
                    self.limit
                ),
            ));
        }
        self.used.set(used + 1);
        Ok(self.connections.acquire().await)
    }

    /// Whether another job may start: one that calls out needs at least one subrequest left.
    pub fn has_subrequests_left(&self) -> bool {
        self.used.get() < self.limit
    }
}
