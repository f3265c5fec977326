//! A batch's outbound gate. A Worker keeps 6 connections open per invocation and queues the
//! rest, so a batch of 100 deliveries would spend most of its timeouts waiting in that queue;
//! and an invocation may make only so many subrequests. Every handler fetch goes through here:
//! it waits for one of the batch's connections before its timeout starts, never past its job's
//! deadline, and a fetch the invocation has no subrequests or time left for fails as
//! `capacity` (retried, nothing sent) instead of being refused by the runtime or timing out.

pub mod fetch_timeout;

use jobs_shared::runtime::clock::now_ms;
use std::cell::Cell;
use std::rc::Rc;

use async_lock::{Semaphore, SemaphoreGuard};
use jobs_shared::job::lease::ConsumerLimits;
use jobs_shared::job::run_details::Bytes;
use jobs_shared::retry::error_class::{ErrorClass, JobError};

use crate::deadline::within;

/// The least time a request is given: a connection that comes free later than this before
/// the job's deadline is not taken.
const MIN_REQUEST_MS: i64 = 1_000;

/// What one invocation's batch shares: its connections and its subrequest count.
pub struct BatchGate {
    connections: Semaphore,
    used: Cell<u32>,
    limit: u32,
}

impl BatchGate {
    pub fn new(limits: &ConsumerLimits) -> BatchGate {
        BatchGate {
            connections: Semaphore::new(limits.connections),
            used: Cell::new(0),
            limit: limits.subrequests,
        }
    }

    /// Whether another job may start: one that calls out needs at least one subrequest left.
    pub fn has_subrequests_left(&self) -> bool {
        self.used.get() < self.limit
    }

    /// One job's way through the gate: its requests end by `requests_end_ms`.
    pub fn for_job(&self, requests_end_ms: i64) -> Outbound<'_> {
        Outbound {
            gate: self,
            requests_end_ms,
            bytes: Rc::default(),
        }
    }
}

/// The gate as one job sees it, and the body bytes its requests sent and read (its run
/// record's `bytes`): counted by `fetch_timeout` as requests go out and bodies are read.
pub struct Outbound<'a> {
    gate: &'a BatchGate,
    requests_end_ms: i64,
    bytes: Rc<Cell<Bytes>>,
}

impl<'a> Outbound<'a> {
    /// The body bytes the job's requests sent and read so far.
    pub fn bytes(&self) -> Bytes {
        self.bytes.get()
    }

    /// Counts `bytes` more received outside `fetch_timeout` (a browser's image).
    pub fn add_received(&self, bytes: usize) {
        count(&self.bytes, 0, bytes);
    }

    /// A connection for one subrequest of `timeout_ms`, held until the guard drops (after the
    /// body is read), and the time the request may take from now: its timeout, cut only where
    /// the job's own deadline comes first. It waits for a connection while at least
    /// MIN_REQUEST_MS would be left.
    pub async fn connection(&self, timeout_ms: u32) -> Result<Connection<'a>, JobError> {
        let gate = self.gate;
        let used = gate.used.get();
        if used >= gate.limit {
            return Err(JobError::new(
                ErrorClass::Capacity,
                format!(
                    "this invocation spent its {} subrequests (SUBREQUEST_LIMIT); retried in another",
                    gate.limit
                ),
            ));
        }
        let no_time = || {
            JobError::new(
                ErrorClass::Capacity,
                "no connection came free before the job's deadline",
            )
        };
        let wait_ms = self.requests_end_ms - MIN_REQUEST_MS - now_ms();
        if wait_ms < 0 {
            return Err(no_time());
        }
        // Counted before the wait, so a job that starts meanwhile sees it spent; given back if
        // no connection comes.
        gate.used.set(used + 1);
        let Some(guard) = within(wait_ms as u64, gate.connections.acquire()).await else {
            gate.used.set(gate.used.get() - 1);
            return Err(no_time());
        };
        let left = (self.requests_end_ms - now_ms()).max(MIN_REQUEST_MS);
        Ok(Connection {
            guard,
            timeout_ms: i64::from(timeout_ms).min(left) as u32,
        })
    }
}

/// One of the batch's connections, held until it drops (after the body is read), and the time
/// its request may take from now.
pub struct Connection<'a> {
    pub guard: SemaphoreGuard<'a>,
    pub timeout_ms: u32,
}

/// Adds to a job's byte counts.
fn count(bytes: &Cell<Bytes>, out: usize, received: usize) {
    let mut now = bytes.get();
    now.out += out as u64;
    now.received += received as u64;
    bytes.set(now);
}
