//! The lease heartbeat: while a batch's jobs run, their leases are extended every third of the
//! lease (or `LEASE_HEARTBEAT_SECS`), so a job that runs long is never taken for a lost one;
//! the extension covers every job the batch holds, waiting, running, or run and not yet
//! recorded (store `jobs::job_extend_leases`).

use jobs_shared::runtime::clock::now_ms;
use std::future::Future;
use std::time::Duration;

use futures::future::{select, Either};
use futures::FutureExt;
use jobs_shared::job::lease::ConsumerLimits;
use jobs_shared::observe::d1_stats::D1Stats;
use jobs_shared::observe::log_line::{fault, LogLevel};
use jobs_store::jobs::{self, RunKey};
use worker::{D1Database, Delay};

/// What the heartbeat did: its D1 work, and the lease its jobs hold as D1 last confirmed it
/// (the claim's, or the latest heartbeat's), `None` after a heartbeat D1 refused.
pub struct Heartbeat {
    pub stats: D1Stats,
    pub lease_until: Option<i64>,
}

/// The leases of the jobs `held` (each a job's run), first taken until `lease_until` for
/// `lease_ms`.
pub struct Leases<'a> {
    pub held: &'a [RunKey<'a>],
    pub lease_until: i64,
    pub lease_ms: i64,
}

/// Runs `work` while extending `leases`; returns its output and what the heartbeat did.
pub async fn during<T>(
    db: &D1Database,
    leases: &Leases<'_>,
    limits: &ConsumerLimits,
    work: impl Future<Output = T>,
) -> (T, Heartbeat) {
    let mut beat = Heartbeat {
        stats: D1Stats::default(),
        lease_until: Some(leases.lease_until),
    };
    let lease = leases.lease_ms;
    let heartbeat = async {
        let every = limits.heartbeat_every_ms(lease).max(1) as u64;
        loop {
            Delay::from(Duration::from_millis(every)).await;
            let until = now_ms() + lease;
            let extended = jobs::job_extend_leases(db, leases.held, until, &mut beat.stats).await;
            beat.lease_until = extended.as_ref().ok().map(|()| until);
            if let Err(e) = extended {
                let message = format_args!(
                    "extending {} lease(s) failed, tried again in {every} ms: {e}",
                    leases.held.len()
                );
                fault(LogLevel::Error, "heartbeat", message);
            }
        }
    };
    let output = match select(work.boxed_local(), heartbeat.boxed_local()).await {
        Either::Left((output, _)) => output,
        Either::Right((never, _)) => never,
    };
    (output, beat)
}
