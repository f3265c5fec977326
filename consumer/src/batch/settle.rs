//! Stage 5, the settle: each message acked, retried or dead-lettered, as its job's fate and
//! the record say; what was recorded logged; the chains' next steps sent. Also how the batch
//! ends when D1 fails it.

use jobs_shared::runtime::clock::now_ms;
use std::collections::HashMap;

use futures::FutureExt;
use jobs_shared::job::envelope::JobMessage;
use jobs_shared::job::family::Family;
use jobs_shared::job::lifecycle::JobStatus;
use jobs_shared::observe::log_line::{fault, LogLevel};
use jobs_store::jobs::{Seen, Unsent};
use worker::Env;

use super::claim_outcome::Sorted;
use super::context::BatchContext;
use super::fate::{BatchJob, Fate, MessageEnd};
use crate::delivery::{Delivery, Verdict};
use crate::job_events::{self, Recorded};
use crate::{chain, dead_letters};

/// What the batch's messages come to.
pub struct Ends<'a> {
    pub family: Family,
    pub runs: &'a [BatchJob<'a>],
    /// Messages that claimed nothing, and their jobs' state as the record read it.
    pub unclaimed: &'a [&'a Delivery],
    pub seen: &'a [Seen],
    /// Jobs the batch made due (joined groups, callbacks): sent with the next steps.
    pub made_due: &'a [Unsent],
    /// Messages whose job the claim found dead, to dead-letter with the runs' dead.
    pub dead: Vec<(&'a Delivery, JobMessage)>,
}

pub async fn settle(ends: Ends<'_>, env: &Env) {
    let Ends {
        family,
        runs,
        unclaimed,
        seen,
        made_due,
        mut dead,
    } = ends;
    let seen: HashMap<&str, &Seen> = seen.iter().map(|s| (s.id.as_str(), s)).collect();
    let now = now_ms();
    for delivery in unclaimed {
        let id = delivery.job_id().unwrap_or_default();
        let (reason, verdict) = unclaimed_end(seen.get(id).copied(), family, now);
        job_events::skipped(delivery, family, reason, verdict.retry_secs());
        delivery.settle(verdict);
    }

    let recorded: Vec<Recorded> = runs.iter().filter_map(BatchJob::recorded).collect();
    job_events::recorded(family, &recorded, env);
    for run in runs {
        match run.fate.message_end() {
            MessageEnd::Settled(verdict) => {
                if let Fate::Released(release) = &run.fate {
                    let retry = Some(release.retry_secs);
                    job_events::skipped(run.delivery, family, release.reason, retry);
                }
                run.delivery.settle(verdict)
            }
            MessageEnd::DeadLettered => {
                let cid = Some(run.job.correlation());
                let message = JobMessage::stored(&run.job.id, &run.job.job_type, cid);
                dead.push((run.delivery, message))
            }
        }
    }
    // A chain's next step, and a group's branches, inherit the step's correlation id.
    let next_steps: Vec<_> = (runs.iter())
        .filter_map(|r| Some((&r.decided()?.chain, r.job.correlation())))
        .flat_map(|(planned, cid)| {
            let branches = planned.branches.iter().map(|b| &b.job);
            planned
                .next
                .iter()
                .chain(branches)
                .map(move |job| (job, cid))
        })
        .collect();
    futures::join!(
        dead_letters::send(family, &dead, env).boxed_local(),
        chain::send(env, &next_steps, made_due).boxed_local()
    );
}

/// The record could not be written at all: the run jobs stay `running` under their lease and
/// their messages come back once it ends; the unclaimed wait out D1's outage; the dead the
/// claim found (already `dead` in D1) are dead-lettered.
pub async fn unrecorded(
    ctx: &BatchContext<'_>,
    runs: &[BatchJob<'_>],
    sorted: &Sorted<'_>,
    e: &worker::Error,
) {
    let (family, lease_ms) = (ctx.terms.family, ctx.terms.lease_ms);
    let message = format_args!("recording outcomes failed: {e}");
    fault(LogLevel::Error, "batch", message);
    runs.iter()
        .for_each(|r| r.delivery.retry((lease_ms / 1000) as u64));
    d1_failed(&sorted.unclaimed, e);
    dead_letters::send(family, &sorted.dead, ctx.env).await;
}

/// Why a message claimed nothing, from its job's state as the record read it (`None`: no such
/// job), and what becomes of the message.
pub fn unclaimed_end(seen: Option<&Seen>, family: Family, now: i64) -> (&'static str, Verdict) {
    let Some(seen) = seen else {
        return ("not_found", Verdict::Ack); // deleted, or never written
    };
    if seen.family != family.as_str() {
        // Priority aging promoted the job and sent it to its new family's queue.
        return ("superseded", Verdict::Ack);
    }
    let retry = |reason, at_ms| {
        let delay_secs = secs_until(at_ms, now);
        (reason, Verdict::Retry { delay_secs })
    };
    match JobStatus::parse(&seen.status) {
        // Another attempt holds the lease; if its worker died, this message takes over after.
        Some(JobStatus::Running) => retry("lease_held", seen.lease_until.unwrap_or(now)),
        // Delivered early: wait until due. (Read after the handlers ran, so a job that was not
        // due at the claim may be due now: it comes back in a second and claims then.)
        Some(JobStatus::Queued | JobStatus::Retrying) => retry("not_due", seen.run_at),
        Some(status) if status.is_terminal() => ("finished", Verdict::Ack),
        // Kept in D1: the sweep sends its message when it is due.
        _ => ("scheduled", Verdict::Ack),
    }
}

/// Whole seconds from `now` to `at_ms`, rounded up, at least 1.
fn secs_until(at_ms: i64, now: i64) -> u64 {
    ((at_ms - now).max(0) as u64).div_ceil(1000).max(1)
}

/// D1 itself failed: each message comes back after a delay that grows with its deliveries
/// (shared `d1_retry_secs`), so an outage of many hours spends few of the queue's retries.
pub fn d1_failed(deliveries: &[&Delivery], e: &dyn std::fmt::Display) {
    let message = format_args!(
        "D1 unavailable, {} message(s) retried with backoff: {e}",
        deliveries.len()
    );
    fault(LogLevel::Error, "batch", message);
    for delivery in deliveries {
        delivery.retry(jobs_shared::retry::d1_retry::d1_retry_secs(
            delivery.delivery_attempts,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000;

    fn seen(status: &str, family: &str) -> Seen {
        Seen {
            id: "j".into(),
            status: status.into(),
            run_at: NOW + 4_500,
            lease_until: Some(NOW + 60_000),
            family: family.into(),
        }
    }

    fn end(status: &str) -> (&'static str, Verdict) {
        unclaimed_end(Some(&seen(status, "default")), Family::Default, NOW)
    }

    #[test]
    fn a_job_that_is_gone_or_moved_on_acks_its_message() {
        assert_eq!(
            unclaimed_end(None, Family::Default, NOW),
            ("not_found", Verdict::Ack)
        );
        let promoted = seen("queued", "high");
        assert_eq!(
            unclaimed_end(Some(&promoted), Family::Default, NOW),
            ("superseded", Verdict::Ack)
        );
        for status in ["succeeded", "dead", "cancelled", "skipped"] {
            assert_eq!(end(status), ("finished", Verdict::Ack), "{status}");
        }
        assert_eq!(end("scheduled"), ("scheduled", Verdict::Ack));
    }

    #[test]
    fn a_message_early_or_behind_a_live_lease_comes_back_when_it_may_claim() {
        let retry = |delay_secs| Verdict::Retry { delay_secs };
        assert_eq!(end("running"), ("lease_held", retry(60)));
        assert_eq!(end("queued"), ("not_due", retry(5)), "4.5 s, rounded up");
        assert_eq!(end("retrying"), ("not_due", retry(5)));
    }

    #[test]
    fn a_wait_is_at_least_a_second() {
        assert_eq!(secs_until(NOW - 10_000, NOW), 1, "already due");
        assert_eq!(secs_until(NOW, NOW), 1);
        assert_eq!(secs_until(NOW + 1, NOW), 1);
        assert_eq!(secs_until(NOW + 1_001, NOW), 2);
    }
}
