//! Stage 4, the record: one D1 round trip writes every attempt's outcome and run record, its
//! job's next state and its chain's next move, undoes the claims of jobs released unstarted,
//! fails the chains of steps the claim found dead, adds the batch's minute tallies, and reads
//! why the other messages claimed nothing (store `jobs::job_set_outcome_many`). Should D1
//! refuse that batch, each run is recorded alone, so that a row D1 rejects fails its own job
//! and no other.

use futures::FutureExt;
use jobs_shared::job::family::Family;
use jobs_shared::job::flow_control::FlowTally;
use jobs_shared::observe::d1_stats::D1Stats;
use jobs_shared::observe::job_event::Settled;
use jobs_shared::observe::job_minutes::{self, Ended, MinuteTally};
use jobs_shared::observe::log_line::{fault, LogLevel};
use jobs_shared::runtime::clock::now_ms;
use jobs_store::jobs::{
    self, Claim, Claimed, FailedChain, Finished, Leftovers, Recorded, Seen, Unsent,
};
use worker::js_sys::Math;
use worker::D1Database;

use super::fate::{BatchJob, Fate};
use crate::chain;
use crate::delivery::Delivery;

/// What the record writes beside the runs.
pub struct Written<'a> {
    pub family: Family,
    /// The batch's claim: the dead and expired steps whose chains fail.
    pub claim: &'a Claim,
    pub batch_started: i64,
    /// Messages that claimed nothing: their jobs' state is read.
    pub unclaimed: &'a [&'a Delivery],
    /// What flow control did per type and key (`flow_keys`).
    pub flow: &'a [FlowTally],
}

/// What the record read and tallied.
pub struct RecordedBatch {
    /// The state of each unclaimed message's job (none for a job that no longer exists).
    pub seen: Vec<Seen>,
    /// The jobs the batch made due, to be sent: groups its branch ends joined, callbacks D1
    /// wrote for the jobs and chains it ended.
    pub made_due: Vec<Unsent>,
    /// The batch's attempts by outcome, for its `batch.completed` line.
    pub settled: Settled,
}

pub async fn record(
    db: &D1Database,
    runs: &mut [BatchJob<'_>],
    written: &Written<'_>,
    stats: &mut D1Stats,
) -> worker::Result<RecordedBatch> {
    let family = written.family;
    let failed_chains = failed_chains(written.claim, written.batch_started);
    let released: Vec<&Claimed> = (runs.iter())
        .filter(|r| matches!(r.fate, Fate::Released(_)))
        .map(|r| r.job)
        .collect();
    let unclaimed: Vec<&str> = written
        .unclaimed
        .iter()
        .filter_map(|d| d.job_id())
        .collect();
    let minutes = tally(family, runs);
    let settled = (minutes.iter()).fold(Settled::default(), |all, m| all.merged(&m.settled));
    let leftovers = Leftovers {
        released: &released,
        failed_chains: &failed_chains,
        unclaimed: &unclaimed,
        minutes: &minutes,
        flow: written.flow,
        flow_at: now_ms(),
    };
    let finished: Vec<Finished> = runs.iter().filter_map(BatchJob::finished).collect();
    let recorded = match jobs::job_set_outcome_many(db, family, &finished, &leftovers, stats).await
    {
        Ok(recorded) => recorded,
        Err(e) => {
            let message = format_args!(
                "recording {} outcome(s) together failed, one by one now: {e}",
                finished.len()
            );
            fault(LogLevel::Error, "batch", message);
            one_by_one(db, family, runs, &leftovers, stats)
                .boxed_local()
                .await?
        }
    };
    Ok(RecordedBatch {
        seen: recorded.seen,
        made_due: recorded.made_due,
        settled,
    })
}

/// The chains of the steps the claim ended: found dead of a lost attempt, or expired.
fn failed_chains(claim: &Claim, batch_started: i64) -> Vec<FailedChain> {
    let lost = (claim.exhausted.iter())
        .filter_map(|job| chain::failed_by_lost_attempt(job, batch_started));
    let expired =
        (claim.expired.iter()).filter_map(|e| chain::failed_by_expiry(&e.job, batch_started));
    lost.chain(expired).collect()
}

/// The batch's decided attempts per family-minute, for the charts (`job_minutes`).
fn tally(family: Family, runs: &[BatchJob<'_>]) -> Vec<MinuteTally> {
    let ended = runs.iter().filter_map(|run| {
        let decided = run.decided()?;
        let attempt = &decided.attempt;
        Some(Ended {
            finished_at: attempt.finished_at,
            duration_ms: attempt.finished_at - attempt.started_at,
            decision: &decided.decision,
            wait_ms: (run.job.runs == 1).then(|| attempt.started_at - run.job.created_at),
        })
    });
    job_minutes::tally(family, ended)
}

/// Writes each run's record in a round trip of its own, after the batch's single record was
/// refused: a row D1 rejects then fails its own job (retried as an internal error) and no
/// other. Only on that failure path: the happy path stays at one round trip.
async fn one_by_one(
    db: &D1Database,
    family: Family,
    runs: &mut [BatchJob<'_>],
    leftovers: &Leftovers<'_>,
    stats: &mut D1Stats,
) -> worker::Result<Recorded> {
    let mut recorded = jobs::job_set_outcome_many(db, family, &[], leftovers, stats).await?;
    for run in runs.iter_mut() {
        let Some(one) = run.finished() else {
            continue;
        };
        let e = match jobs::job_set_outcome_many(db, family, &[one], &Leftovers::default(), stats)
            .await
        {
            Ok(alone) => {
                recorded.made_due.extend(alone.made_due);
                continue;
            }
            Err(e) => e,
        };
        let Fate::Decided(decided) = &mut run.fate else {
            continue;
        };
        let message = format!("the attempt's outcome could not be recorded: {e}");
        decided.fail_unrecorded(run.job, message, Math::random(), run.delivery.queue_limit);
        let Some(failed) = run.finished() else {
            continue;
        };
        // Even the failure cannot be written: D1 itself is failing, leave it to the lease.
        let alone =
            jobs::job_set_outcome_many(db, family, &[failed], &Leftovers::default(), stats).await?;
        recorded.made_due.extend(alone.made_due);
    }
    Ok(recorded)
}
