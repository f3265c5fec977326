//! A consumer batch's record: one round trip writes every attempt's record (a failure's run
//! record, the batch's successes in one row) and its job's next state, a chain's next move,
//! the claims to undo, and reads the jobs of the messages that claimed nothing. Never one per
//! message.

use jobs_shared::job::chain::ChainMove;
use jobs_shared::job::family::Family;
use jobs_shared::job::flow_control::FlowTally;
use jobs_shared::job::job_outcome::Decision;
use jobs_shared::job::run_details::{Ran, RunDetails};
use jobs_shared::job::stored_result::{json_arrays, MAX_ROWS_JSON_BYTES};
use jobs_shared::observe::d1_stats::D1Stats;
use jobs_shared::observe::job_event::run_outcome;
use jobs_shared::observe::job_minutes::MinuteTally;
use jobs_shared::retry::error_class::JobError;
use serde::Serialize;
use worker::{D1Database, D1PreparedStatement};

use super::callback::job_list_new_callbacks;
use super::chain::{self, job_set_chain_failed_many, ChainWrite, FailedChain};
use super::claim::{job_list_seen, Claimed, RunKey, Seen};
use super::group::job_join_groups;
use super::unsent::Unsent;
use crate::d1::{counted_batch, json_text};
use crate::flow_keys::flow_key_add_many;
use crate::invocations::invocation_insert;
use crate::job_minutes::job_minute_add_many;
use crate::job_runs::job_run_insert_failed;
use crate::success_batches::{success_batch_insert, Success, SuccessBatch};

/// What the record writes beside the attempts' outcomes, and the jobs it reads.
#[derive(Clone, Copy, Default)]
pub struct Leftovers<'a> {
    /// Jobs claimed but never started (the batch ran out of wall time or subrequests): back to
    /// `queued` with the claim's attempt and run undone, for their messages to come back.
    pub released: &'a [&'a Claimed],
    /// The chains of steps the claim found dead.
    pub failed_chains: &'a [FailedChain],
    /// Jobs of messages that claimed nothing: their state is read, to say why.
    pub unclaimed: &'a [&'a str],
    /// The batch's attempts per family-minute, for the charts (`job_minutes`).
    pub minutes: &'a [MinuteTally],
    /// What flow control did per type and key (`flow_keys`), at `flow_at`.
    pub flow: &'a [FlowTally],
    pub flow_at: i64,
}

/// What the record read back: the jobs of the messages that claimed nothing, and the jobs the
/// batch made due, to be sent: the groups whose last branches it ended, and the callbacks D1
/// wrote for the jobs and chains it ended.
#[derive(Default)]
pub struct Recorded {
    pub seen: Vec<Seen>,
    pub made_due: Vec<Unsent>,
}

/// One attempt's end, to be written.
pub struct Finished<'a> {
    pub job: &'a Claimed,
    pub started_at: i64,
    pub finished_at: i64,
    pub decision: &'a Decision,
    pub result: Option<String>,
    /// What the attempt spent, in cents (job_runs.cost_cents, or a success's jobs.run_cost_cents).
    pub cost_cents: f64,
    /// What ran it and what it produced (job_runs.details, or a success's jobs.run_details).
    pub details: &'a RunDetails,
    /// The chain's move after it, with the next step's job when there is one.
    pub chain: ChainWrite<'a>,
}

/// The batch's second round trip: every attempt's record and the job's next state (plus a
/// chain's next steps), and the state of the jobs in `unclaimed` (messages that claimed
/// nothing), which it returns. No round trip when there is nothing to write or read.
///
/// Outcomes are two set-based statements per kind of outcome, whatever the batch size, since
/// per-statement overhead is most of D1's cost at batch sizes. A success writes only its job's
/// row (its run record is kept there), so it costs no row of its own beyond the batch's one.
/// Successes, nearly every row, carry only what differs between them (id, run, end, result,
/// cost, details when not the batch's); their constant columns are in the SQL. Each kind's
/// rows are one JSON array of objects (`SucceededRow`, `FailedRow`), read through a
/// `MATERIALIZED` CTE: a row read straight from `json_each` is rendered again at every
/// reference, and materialized the record's UPDATE takes a fifth less time (docs/performance.md
/// "Benchmark"). Every write is guarded by (status = running, runs = this run), so an attempt
/// that lost its lease to a rescuer, or was overtaken by an operator's retry, cannot overwrite
/// the newer one. The unary `+` keeps SQLite on the primary key (see `job_claim`).
pub async fn job_set_outcome_many(
    db: &D1Database,
    family: Family,
    finished: &[Finished<'_>],
    leftovers: &Leftovers<'_>,
    stats: &mut D1Stats,
) -> worker::Result<Recorded> {
    let Leftovers {
        released,
        failed_chains,
        unclaimed,
        minutes,
        flow,
        flow_at,
    } = *leftovers;
    // The details most successes share (one handler, one invocation, nothing produced) are
    // written once per statement, not once per row.
    let shared = finished
        .iter()
        .find(|f| matches!(f.decision, Decision::Succeed))
        .map(|f| f.details);
    let mut succeeded = Vec::new();
    let mut successes = Vec::new();
    let mut failed = Vec::new();
    for f in finished {
        match f.decision {
            Decision::Succeed => {
                succeeded.push(json_text(&SucceededRow::of(f, shared)));
                successes.push(f);
            }
            Decision::Retry { error, delay_secs } => {
                let run_at = f.finished_at + i64::from(*delay_secs) * 1000;
                failed.push(json_text(&FailedRow::of(f, error, Some(run_at), true)));
            }
            // Kept in D1 (no message in the queue) until the sweep sends one at `until_ms`.
            Decision::RetryLater { error, until_ms } => {
                failed.push(json_text(&FailedRow::of(f, error, Some(*until_ms), false)))
            }
            Decision::Dead { error } | Decision::Skip { error } => {
                failed.push(json_text(&FailedRow::of(f, error, None, true)))
            }
        }
    }
    let mut statements = Vec::new();
    // What every success shares with its invocation's runs is kept once, in `invocations`.
    if let Some(shared) = shared {
        statements.push(invocation_insert(
            db,
            &shared.invocation,
            &shared.shared_by_invocation(),
        )?);
    }
    let ran = json_text(&shared.map(|d| &d.ran));
    let shared = SharedRun {
        ran: &ran,
        lease_known: shared.is_some_and(|d| d.lease_until.is_some()),
        invocation: shared.map_or("", |d| &d.invocation),
    };
    for (range, rows) in json_arrays(&succeeded, MAX_ROWS_JSON_BYTES) {
        statements.push(succeeded_update(db, &rows, &shared)?);
        // Right after the update: it counts the rows the update changed.
        statements.push(success_batch(db, family, &rows, &successes[range])?);
    }
    for (_, rows) in json_arrays(&failed, MAX_ROWS_JSON_BYTES) {
        statements.push(job_run_insert_failed(db, &rows)?);
        statements.push(failed_update(db, &rows)?);
    }
    if !released.is_empty() {
        statements.push(release(db, released)?);
    }
    if !failed_chains.is_empty() {
        statements.push(job_set_chain_failed_many(db, failed_chains)?);
    }
    for f in finished {
        let step_status = run_outcome(f.decision);
        statements.extend(chain::statements(
            db,
            f.job,
            f.chain,
            step_status,
            f.finished_at,
        )?);
    }
    if !minutes.is_empty() {
        statements.push(job_minute_add_many(db, minutes)?);
    }
    if !flow.is_empty() {
        statements.push(flow_key_add_many(db, flow, flow_at)?);
    }
    // After the branches' own ends: a group whose last branch ended here is made due.
    let mut groups: Vec<&str> = (finished.iter())
        .filter(|f| {
            !matches!(
                f.decision,
                Decision::Retry { .. } | Decision::RetryLater { .. }
            )
        })
        .filter_map(|f| f.job.group_id.as_deref())
        .collect();
    groups.sort_unstable();
    groups.dedup();
    let joined_at = (!groups.is_empty()).then_some(statements.len());
    if joined_at.is_some() {
        let at = finished
            .iter()
            .map(|f| f.finished_at)
            .max()
            .unwrap_or_default();
        statements.push(job_join_groups(db, Some(&groups), at, groups.len() as u32)?);
    }
    let called_back = called_back(finished, failed_chains);
    let callbacks_at = (!called_back.is_empty()).then_some(statements.len());
    if callbacks_at.is_some() {
        statements.push(job_list_new_callbacks(db, &called_back)?);
    }
    if !unclaimed.is_empty() {
        statements.push(job_list_seen(db, unclaimed)?);
    }
    if statements.is_empty() {
        return Ok(Recorded::default());
    }
    let results = counted_batch(db, statements, stats).await?;
    let seen = match (unclaimed.is_empty(), results.last()) {
        (false, Some(seen)) => seen.results()?,
        _ => Vec::new(),
    };
    let mut made_due = Vec::new();
    for at in [joined_at, callbacks_at].into_iter().flatten() {
        made_due.extend(results[at].results::<Unsent>()?);
    }
    Ok(Recorded { seen, made_due })
}

/// The jobs whose callbacks this record may write (shared `job::callback`): those it ends that
/// have one, and the first jobs of the chains it ends.
fn called_back<'a>(finished: &'a [Finished<'_>], failed_chains: &'a [FailedChain]) -> Vec<&'a str> {
    let jobs = (finished.iter().filter(|f| f.ends_job()))
        .filter(|f| f.job.callback.is_some())
        .map(|f| f.job.id.as_str());
    let chains = finished.iter().filter_map(|f| match f.chain.chain {
        ChainMove::Done { parent_id } | ChainMove::Failed { parent_id, .. } => {
            Some(parent_id.as_str())
        }
        _ => None,
    });
    let failed = failed_chains.iter().map(|c| c.parent_id.as_str());
    jobs.chain(chains).chain(failed).collect()
}

impl Finished<'_> {
    /// Whether the attempt ends its job (succeeded, dead or skipped), not to be retried.
    fn ends_job(&self) -> bool {
        !matches!(
            self.decision,
            Decision::Retry { .. } | Decision::RetryLater { .. }
        )
    }
}

/// The `success_batches` row of `successes`, whose rows are `rows`.
fn success_batch(
    db: &D1Database,
    family: Family,
    rows: &str,
    successes: &[&Finished<'_>],
) -> worker::Result<D1PreparedStatement> {
    let finished_at = successes
        .iter()
        .map(|f| f.finished_at)
        .max()
        .unwrap_or_default();
    let first_job_id = successes
        .iter()
        .map(|f| f.job.id.as_str())
        .min()
        .unwrap_or_default();
    let packed: Vec<Success> = successes
        .iter()
        .map(|f| {
            let job = f.job;
            Success(
                &job.job_type,
                f.finished_at - f.started_at,
                (job.runs == 1).then_some(f.started_at - job.created_at),
                f.finished_at - job.run_at,
            )
        })
        .collect();
    let batch = SuccessBatch {
        rows,
        successes: &packed,
        finished_at,
        first_job_id,
        family,
    };
    success_batch_insert(db, &batch)
}

/// A success as the succeeded update reads it (`?1`'s rows): its run's details (shared
/// [`Ran`]) null where they are the batch's shared ones.
#[derive(Serialize)]
struct SucceededRow<'a> {
    id: &'a str,
    run: u32,
    finished_at: i64,
    result: Option<&'a str>,
    cost_cents: f64,
    details: Option<&'a Ran>,
}

impl<'a> SucceededRow<'a> {
    /// Its own details ([`Ran`]: what its invocation shares is kept there), left out (null)
    /// when they equal `shared`'s.
    fn of(f: &'a Finished<'_>, shared: Option<&RunDetails>) -> Self {
        SucceededRow {
            id: &f.job.id,
            run: f.job.runs,
            finished_at: f.finished_at,
            result: f.result.as_deref(),
            cost_cents: f.cost_cents,
            details: (Some(&f.details.ran) != shared.map(|d| &d.ran)).then_some(&f.details.ran),
        }
    }
}

/// What a batch's successes share: the details most have (shared [`Ran`], as JSON), whether
/// those carry the lease (the consumer's account of it), and their invocation.
struct SharedRun<'a> {
    ran: &'a str,
    lease_known: bool,
    invocation: &'a str,
}

/// The successes' update: each job `succeeded`, its run's record kept on its row with its
/// invocation (`?4`), whose `invocations` row keeps the rest; a row's details null are the
/// batch's shared ones (`?2`). The batch's successes get one `success_batches` row, right
/// after. Its details carry the lease the job held when the consumer knows it (`?3`, nearly
/// always); else each job's is read into its details here, which costs a JSON edit per row.
fn succeeded_update(
    db: &D1Database,
    rows: &str,
    shared: &SharedRun<'_>,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "WITH o AS MATERIALIZED (SELECT value FROM json_each(?1)) \
         UPDATE jobs SET status = 'succeeded', result = o.value ->> 'result', \
         error_class = NULL, last_error = NULL, sent_at = o.value ->> 'finished_at', \
         finished_at = o.value ->> 'finished_at', run_cost_cents = o.value ->> 'cost_cents', \
         run_details = IIF(?3, COALESCE(o.value ->> 'details', ?2), \
         json_set(COALESCE(o.value ->> 'details', ?2), '$.lease_until', jobs.lease_until)), \
         run_invocation = ?4, lease_until = NULL, updated_at = o.value ->> 'finished_at', \
         escalated_at = NULL FROM o \
         WHERE jobs.id = o.value ->> 'id' AND +jobs.status = 'running' \
         AND jobs.runs = o.value ->> 'run'",
        rows,
        shared.ran,
        shared.lease_known,
        shared.invocation
    )
}

/// A failure as its run record (`job_runs::job_run_insert_failed`) and the failed update read
/// it: `sent_at` null while no message is in the queue, `ended_at` the job's end when the
/// attempt ended it (dead or skipped), else null.
#[derive(Serialize)]
struct FailedRow<'a> {
    id: &'a str,
    run: u32,
    started_at: i64,
    finished_at: i64,
    cost_cents: f64,
    outcome: &'static str,
    error_class: &'static str,
    error_message: &'a str,
    run_at: Option<i64>,
    sent_at: Option<i64>,
    ended_at: Option<i64>,
    details: &'a RunDetails,
}

impl<'a> FailedRow<'a> {
    /// `message_in_queue`: false while no message is in the queue (sent_at stays NULL).
    fn of(
        f: &'a Finished<'_>,
        error: &'a JobError,
        run_at: Option<i64>,
        message_in_queue: bool,
    ) -> Self {
        let ended = matches!(f.decision, Decision::Dead { .. } | Decision::Skip { .. });
        FailedRow {
            id: &f.job.id,
            run: f.job.runs,
            started_at: f.started_at,
            finished_at: f.finished_at,
            cost_cents: f.cost_cents,
            outcome: run_outcome(f.decision),
            error_class: error.class.as_str(),
            error_message: &error.message,
            run_at,
            sent_at: message_in_queue.then_some(f.finished_at),
            ended_at: ended.then_some(f.finished_at),
            details: f.details,
        }
    }
}

/// The failures' update, right after their run records (which it repeats the guard of): the
/// run's outcome is the job's new status (retrying, dead, or skipped: a skip's reason is its
/// error class).
fn failed_update(db: &D1Database, rows: &str) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "WITH o AS MATERIALIZED (SELECT value FROM json_each(?1)) \
         UPDATE jobs SET status = CASE o.value ->> 'outcome' WHEN 'retrying' THEN 'retrying' \
         WHEN 'dead' THEN 'dead' WHEN 'skipped' THEN 'skipped' END, \
         result = NULL, error_class = o.value ->> 'error_class', \
         last_error = o.value ->> 'error_message', \
         run_at = COALESCE(o.value ->> 'run_at', jobs.run_at), sent_at = o.value ->> 'sent_at', \
         finished_at = o.value ->> 'ended_at', lease_until = NULL, \
         updated_at = o.value ->> 'finished_at', escalated_at = NULL FROM o \
         WHERE jobs.id = o.value ->> 'id' AND +jobs.status = 'running' \
         AND jobs.runs = o.value ->> 'run'",
        rows
    )
}

/// Undoes the claim of jobs that never started: no attempt was spent on them.
fn release(db: &D1Database, jobs: &[&Claimed]) -> worker::Result<D1PreparedStatement> {
    let rows: Vec<RunKey> = jobs
        .iter()
        .map(|j| RunKey {
            id: &j.id,
            run: j.runs,
        })
        .collect();
    let rows = json_text(&rows);
    sql!(
        db,
        "UPDATE jobs SET status = 'queued', attempts = attempts - 1, runs = runs - 1, \
         lease_until = NULL FROM json_each(?1) o \
         WHERE jobs.id = o.value ->> 'id' AND +jobs.status = 'running' \
         AND jobs.runs = o.value ->> 'run'",
        &rows
    )
}
