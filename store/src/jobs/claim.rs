//! A consumer batch's claim: one round trip moves every claimable job of the batch to
//! `running` (two when a message claims nothing at first), and the heartbeat extends the
//! leases of those it still runs.

use std::collections::HashSet;

use jobs_shared::job::chain::ChainColumns;
use jobs_shared::job::enqueue::EXPIRED_UNRUN;
use jobs_shared::job::family::Family;
use jobs_shared::job::lease::LOST_ATTEMPT;
use jobs_shared::observe::d1_stats::D1Stats;
use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement};

use crate::d1::{counted_batch, json_text};

/// Messages may arrive a little before their delay ends; this much early is still "due".
const EARLY_TOLERANCE_MS: i64 = 1_000;

/// A job this batch now runs, read from the claim's packed row (see `packed!`).
#[derive(Deserialize)]
pub struct Claimed {
    pub id: String,
    pub job_type: String,
    pub payload: String,
    pub attempts: u32,
    pub max_attempts: u32,
    pub runs: u32,
    /// Chain columns (docs/app-guide.md "Job chains"); all absent outside a chain.
    pub parent_id: Option<String>,
    pub chain_step: Option<u32>,
    pub next_steps: Option<String>,
    pub chain_status: Option<String>,
    /// The enqueue request's correlation id (NULL on jobs written without one).
    pub correlation_id: Option<String>,
    /// The job's own retry policy as stored (shared `JobRetry`); NULL for its type's.
    pub retry_policy: Option<String>,
    /// Who enqueued it (a chain's next step inherits it).
    pub enqueued_by: Option<String>,
    /// When it was enqueued: a first run's wait is from here to its start.
    pub created_at: i64,
    /// When it was due: its latency is from here to its end.
    pub run_at: i64,
    /// Its own flow key (shared `job::flow_control`); NULL for nearly every job.
    pub flow_key: Option<String>,
    /// Its own flow limits as stored (shared `flow_control::Limits`); NULL for nearly every job.
    pub flow_limits: Option<String>,
    /// A workflow step's inputs: earlier steps' results by name (shared `job::workflow_step`);
    /// a group's branch's, its group's with its own `item` and `index`, joined here.
    pub inputs: Option<String>,
    /// A group's branch: its group, and the group's status now (a branch of a group that has
    /// ended is skipped, not run: shared `job::workflow_group`).
    pub group_id: Option<String>,
    pub group_status: Option<String>,
    /// Its callback's target (shared `job::callback`): its end's delivery, which D1 writes, is
    /// sent after the record.
    pub callback: Option<String>,
}

/// A claim's statement, returning each job it claims as a packed [`Claimed`]: `$pre`, the
/// statement up to its `RETURNING`, and its arguments. The columns, in `Claimed`'s fields'
/// order (a test below holds the two equal).
macro_rules! claimed {
    ($db:expr, $pre:literal $(, $arg:expr)* $(,)?) => {
        packed!($db, Claimed, from "jobs", {
            "id" = "id", "job_type" = "type", "payload" = "payload", "attempts" = "attempts",
            "max_attempts" = "max_attempts", "runs" = "runs", "parent_id" = "parent_id",
            "chain_step" = "chain_step", "next_steps" = "next_steps",
            "chain_status" = "chain_status", "correlation_id" = "correlation_id",
            "retry_policy" = "retry_policy", "enqueued_by" = "enqueued_by",
            "created_at" = "created_at", "run_at" = "run_at", "flow_key" = "flow_key",
            "flow_limits" = "flow_limits",
            "inputs" = "IIF(group_id IS NULL, inputs, (SELECT IIF(g.inputs IS NULL, jobs.inputs, \
              IIF(jobs.inputs IS NULL, g.inputs, json_set(g.inputs, '$.item', \
              json(jobs.inputs -> '$.item'), '$.index', jobs.inputs -> '$.index'))) \
              FROM jobs g WHERE g.id = jobs.group_id))",
            "group_id" = "group_id",
            "group_status" = "(SELECT g.status FROM jobs g WHERE g.id = jobs.group_id)",
            "callback" = "callback",
        }, $pre + PACKED + "" $(, $arg)*)
    };
}

impl Claimed {
    /// The job's correlation id: the enqueue request's, or its own id for jobs that had none.
    pub fn correlation(&self) -> &str {
        self.correlation_id.as_deref().unwrap_or(&self.id)
    }

    /// The `X-Jobs-Attempt` of this run's delivery: its run number, which never repeats over
    /// the job's life. `attempts` would: an operator's retry or replay resets it, and an app
    /// deduplicating on (id, attempt) would drop that delivery (docs/app-guide.md "Signed
    /// delivery").
    pub fn delivery_attempt(&self) -> u32 {
        self.runs
    }
}

/// The state of a job whose message claimed nothing, to say why.
#[derive(Deserialize)]
pub struct Seen {
    pub id: String,
    pub status: String,
    pub run_at: i64,
    pub lease_until: Option<i64>,
    /// The job's family now; priority aging may have moved it to another queue.
    pub family: String,
}

/// A job a pause covers: not claimed (no attempt spent), marked held for the resume to re-send.
pub struct Held {
    pub id: String,
}

/// A job whose lease ran out under an attempt that was its last: the claim records the lost
/// attempt and ends it `dead` instead of running it again.
pub struct Exhausted {
    pub id: String,
    pub job_type: String,
    pub attempts: u32,
    pub correlation_id: Option<String>,
    /// A dead step fails its chain.
    pub chain: ChainColumns,
}

/// A job whose `expires_at` passed before it started: the claim ends it `skipped` instead of
/// running it (no attempt spent, no run record).
pub struct PastExpiry {
    pub job: Exhausted,
    pub expires_at: i64,
}

/// A job the claim ended instead of running, `dead` ([`Exhausted`]) or `skipped`
/// ([`PastExpiry`]), or held for a pause (`status` `held`), as the settling batch returns it.
#[derive(Deserialize)]
struct Ended {
    id: String,
    job_type: String,
    attempts: u32,
    correlation_id: Option<String>,
    parent_id: Option<String>,
    chain_step: Option<u32>,
    chain_status: Option<String>,
    expires_at: Option<i64>,
    status: String,
}

impl Ended {
    fn job(self) -> Exhausted {
        Exhausted {
            id: self.id,
            job_type: self.job_type,
            attempts: self.attempts,
            correlation_id: self.correlation_id,
            chain: ChainColumns {
                parent_id: self.parent_id,
                chain_step: self.chain_step,
                chain_status: self.chain_status,
            },
        }
    }
}

/// What a batch claims under: its queue's family (only a message from the job's current
/// family's queue claims it), the batch's clock, the lease it takes, and who finds a lost
/// attempt (on that attempt's run record).
pub struct ClaimTerms<'a> {
    pub family: Family,
    pub now_ms: i64,
    pub lease_until: i64,
    pub found_by: &'a str,
}

impl ClaimTerms<'_> {
    /// The latest `run_at` the batch counts as due (messages may arrive a little early).
    fn due_ms(&self) -> i64 {
        self.now_ms + EARLY_TOLERANCE_MS
    }
}

#[derive(Default)]
pub struct Claim {
    pub claimed: Vec<Claimed>,
    pub held: Vec<Held>,
    pub exhausted: Vec<Exhausted>,
    pub expired: Vec<PastExpiry>,
}

/// Moves every claimable job among `ids` to `running` (attempts + 1, a lease) and returns it.
/// Claimable: a state the state machine lets into `running` (`queued`, `retrying`), or
/// `running` whose lease ran out (its worker died). Claiming also proves the job's message
/// left the outbox. Only a message from the job's current family's queue claims it: after a
/// promotion the old one is stale. Why a message claimed nothing is read in the batch's record
/// round trip (`job_set_outcome_many`), for those ids only.
///
/// One statement claims what is plainly runnable: due, queued or retrying, not expired, not
/// paused. That is every message of a usual batch, and then it is the whole claim: each
/// statement of a batch is work of its own for D1, whatever it touches. Only when some message
/// claimed nothing does a second round trip settle those ids ([`job_claim_settling`]): a lost
/// lease to record and rescue, an expired or paused job, a stale or early message.
///
/// Both claims return each job packed into one JSON array (`claimed!`), the unary `+` on the
/// status and run_at terms keeps SQLite on the primary key (it cannot see how short a
/// `json_each` list is and would otherwise scan the whole backlog by status), and whether a
/// pause covers a job begins with whether anything at all is paused, which SQLite reads once
/// per statement.
pub async fn job_claim(
    db: &D1Database,
    ids: &[&str],
    terms: &ClaimTerms<'_>,
    stats: &mut D1Stats,
) -> worker::Result<Claim> {
    let ids_json = json_text(ids);
    let plain = claimed!(db,         "UPDATE jobs SET status = 'running', attempts = attempts + 1, runs = runs + 1, \
         started_at = ?2, updated_at = ?2, lease_until = ?3, sent_at = COALESCE(sent_at, ?2) \
         WHERE id IN (SELECT value FROM json_each(?1)) AND +run_at <= ?4 \
         AND +status IN ('queued', 'retrying') AND (expires_at IS NULL OR expires_at > ?2) \
         AND family = ?5 AND NOT (EXISTS (SELECT 1 FROM pauses) AND EXISTS (SELECT 1 FROM pauses p \
         WHERE (p.kind = 'type' AND p.name = jobs.type) OR (p.kind = 'family' AND p.name = jobs.family))) \
         RETURNING ",
        &ids_json,
        terms.now_ms,
        terms.lease_until,
        terms.due_ms(),
        terms.family.as_str()
    )?;
    let results = counted_batch(db, vec![plain], stats).await?;
    let mut claimed: Vec<Claimed> = results[0].packed_results()?;
    let taken: HashSet<&str> = claimed.iter().map(|c| c.id.as_str()).collect();
    let mut missed: Vec<&str> = ids
        .iter()
        .copied()
        .filter(|id| !taken.contains(id))
        .collect();
    missed.sort_unstable();
    missed.dedup();
    if missed.is_empty() {
        return Ok(Claim {
            claimed,
            ..Claim::default()
        });
    }
    let mut rest = job_claim_settling(db, &missed, terms, stats).await?;
    claimed.append(&mut rest.claimed);
    Ok(Claim { claimed, ..rest })
}

/// The claim of the ids the plain claim missed, in one batch of three statements: the lost
/// attempts' records; one UPDATE that ends or holds (each statement is work of its own, so
/// they share one); the claim of what remains claimable, a job whose lease ran out included.
/// A `running` job whose lease ran out lost its attempt: that attempt gets its run record
/// (`lease_expired`) here, and a job that has no attempt left goes `dead` rather than running
/// past its max_attempts; `found_by` (shared `found_by_consumer`) goes on that run record.
/// A claimable job past its `expires_at` goes `skipped` (error class `expired`) and is not
/// run, and a due one a pause covers is held (`held_at`, and `sent_at` so the sweep leaves it
/// be) until the resume clears held_at and re-sends it. The claim sets no column that a
/// claimed job's index entries depend on (`finished_at` would rewrite its `jobs_unfinished`
/// entry: a row written per job), so the ends cannot share its UPDATE.
async fn job_claim_settling(
    db: &D1Database,
    ids: &[&str],
    terms: &ClaimTerms<'_>,
    stats: &mut D1Stats,
) -> worker::Result<Claim> {
    let ids_json = json_text(ids);
    let (now_ms, family, due_ms) = (terms.now_ms, terms.family.as_str(), terms.due_ms());
    // A running job whose lease ran out (its worker died): its attempt's record.
    let record_lost = sql!(
        db,
        "INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, outcome, \
         error_class, error_message, duration_ms, details) \
         SELECT id, runs, attempts, COALESCE(started_at, ?2), ?2, \
         CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'retrying' END, 'lease_expired', \
         ?5, ?2 - COALESCE(started_at, ?2), json_set(?4, '$.lease_until', lease_until) \
         FROM jobs WHERE id IN (SELECT value FROM json_each(?1)) \
         AND +status = 'running' AND lease_until < ?2 AND family = ?3 \
         ON CONFLICT DO NOTHING",
        &ids_json,
        now_ms,
        family,
        terms.found_by,
        LOST_ATTEMPT
    )?;
    // Before the claim, so what it ends or holds is no longer claimable: a lost attempt that
    // was the job's last (`dead`), a claimable job past its `expires_at` (`skipped`), a due one
    // a pause covers (`held`: its status stays). Each column reads which, the same CASE (SET
    // reads the row as it was).
    let end = sql!(db, Ended =>
        "UPDATE jobs SET \
         status = CASE WHEN +status = 'running' AND lease_until < ?2 AND attempts >= max_attempts \
         THEN 'dead' WHEN expires_at <= ?2 THEN 'skipped' ELSE status END, \
         finished_at = IIF((CASE WHEN +status = 'running' AND lease_until < ?2 \
         AND attempts >= max_attempts THEN 'dead' WHEN expires_at <= ?2 THEN 'skipped' \
         ELSE 'held' END) = 'held', finished_at, ?2), \
         lease_until = IIF((CASE WHEN +status = 'running' AND lease_until < ?2 \
         AND attempts >= max_attempts THEN 'dead' WHEN expires_at <= ?2 THEN 'skipped' \
         ELSE 'held' END) = 'held', lease_until, NULL), \
         updated_at = IIF((CASE WHEN +status = 'running' AND lease_until < ?2 \
         AND attempts >= max_attempts THEN 'dead' WHEN expires_at <= ?2 THEN 'skipped' \
         ELSE 'held' END) = 'held', updated_at, ?2), \
         error_class = CASE (CASE WHEN +status = 'running' AND lease_until < ?2 \
         AND attempts >= max_attempts THEN 'dead' WHEN expires_at <= ?2 THEN 'skipped' \
         ELSE 'held' END) WHEN 'dead' THEN 'lease_expired' WHEN 'skipped' THEN 'expired' \
         ELSE error_class END, \
         last_error = CASE (CASE WHEN +status = 'running' AND lease_until < ?2 \
         AND attempts >= max_attempts THEN 'dead' WHEN expires_at <= ?2 THEN 'skipped' \
         ELSE 'held' END) WHEN 'dead' THEN ?5 WHEN 'skipped' THEN ?6 ELSE last_error END, \
         escalated_at = IIF((CASE WHEN +status = 'running' AND lease_until < ?2 \
         AND attempts >= max_attempts THEN 'dead' WHEN expires_at <= ?2 THEN 'skipped' \
         ELSE 'held' END) = 'dead', NULL, escalated_at), \
         sent_at = CASE (CASE WHEN +status = 'running' AND lease_until < ?2 \
         AND attempts >= max_attempts THEN 'dead' WHEN expires_at <= ?2 THEN 'skipped' \
         ELSE 'held' END) WHEN 'dead' THEN sent_at WHEN 'held' THEN ?2 \
         ELSE COALESCE(sent_at, ?2) END, \
         held_at = IIF((CASE WHEN +status = 'running' AND lease_until < ?2 \
         AND attempts >= max_attempts THEN 'dead' WHEN expires_at <= ?2 THEN 'skipped' \
         ELSE 'held' END) = 'held', ?2, held_at) \
         WHERE id IN (SELECT value FROM json_each(?1)) AND family = ?3 \
         AND ((+status = 'running' AND lease_until < ?2 AND attempts >= max_attempts) \
         OR ((+status IN ('queued', 'retrying') OR (+status = 'running' AND lease_until < ?2)) \
         AND (expires_at <= ?2 OR (+run_at <= ?4 AND (EXISTS (SELECT 1 FROM pauses) \
         AND EXISTS (SELECT 1 FROM pauses p WHERE (p.kind = 'type' AND p.name = jobs.type) \
         OR (p.kind = 'family' AND p.name = jobs.family))))))) \
         RETURNING id, type AS job_type, attempts, correlation_id, parent_id, chain_step, \
         chain_status, expires_at, \
         IIF(status IN ('dead', 'skipped'), status, 'held') AS \"status!: String\"",
        &ids_json,
        now_ms,
        family,
        due_ms,
        LOST_ATTEMPT,
        EXPIRED_UNRUN
    )?;
    // What remains claimable: the plain claim's, or running with its lease run out.
    let claim = claimed!(db,         "UPDATE jobs SET status = 'running', attempts = attempts + 1, runs = runs + 1, \
         started_at = ?2, updated_at = ?2, lease_until = ?3, sent_at = COALESCE(sent_at, ?2) \
         WHERE id IN (SELECT value FROM json_each(?1)) AND +run_at <= ?4 \
         AND (+status IN ('queued', 'retrying') OR (+status = 'running' AND lease_until < ?2)) \
         AND family = ?5 AND NOT (EXISTS (SELECT 1 FROM pauses) AND EXISTS (SELECT 1 FROM pauses p \
         WHERE (p.kind = 'type' AND p.name = jobs.type) OR (p.kind = 'family' AND p.name = jobs.family))) \
         RETURNING ",
        &ids_json,
        now_ms,
        terms.lease_until,
        due_ms,
        family
    )?;
    let results = counted_batch(db, vec![record_lost, end, claim], stats).await?;
    let (mut exhausted, mut expired, mut held) = (Vec::new(), Vec::new(), Vec::new());
    for ended in results[1].results::<Ended>()? {
        match (ended.status.as_str(), ended.expires_at) {
            ("dead", _) => exhausted.push(ended.job()),
            ("skipped", Some(expires_at)) => expired.push(PastExpiry {
                job: ended.job(),
                expires_at,
            }),
            _ => held.push(Held { id: ended.id }),
        }
    }
    Ok(Claim {
        exhausted,
        expired,
        claimed: results[2].packed_results()?,
        held,
    })
}

/// A job's run (`id`, `run`): a row of the heartbeat's and the release's JSON arrays, whose
/// writes are guarded by it, so a job another attempt took over is left alone.
#[derive(Clone, Copy, Serialize)]
pub struct RunKey<'a> {
    pub id: &'a str,
    pub run: u32,
}

/// Extends the lease of jobs a live batch is still running (the heartbeat). The unary `+`
/// keeps SQLite on the primary key.
pub async fn job_extend_leases(
    db: &D1Database,
    jobs: &[RunKey<'_>],
    lease_until: i64,
    stats: &mut D1Stats,
) -> worker::Result<()> {
    let jobs = json_text(jobs);
    let extend = sql!(
        db,
        "UPDATE jobs SET lease_until = ?2 FROM json_each(?1) o \
         WHERE jobs.id = o.value ->> 'id' AND +jobs.status = 'running' \
         AND jobs.runs = o.value ->> 'run'",
        &jobs,
        lease_until
    )?;
    counted_batch(db, vec![extend], stats).await.map(|_| ())
}

/// The state of the jobs `ids` (rows: [`Seen`]): read for messages that claimed nothing.
pub(super) fn job_list_seen(db: &D1Database, ids: &[&str]) -> worker::Result<D1PreparedStatement> {
    let ids = json_text(ids);
    sql!(db, Seen =>
        "SELECT id, status, run_at, lease_until, family FROM jobs \
         WHERE id IN (SELECT value FROM json_each(?1))",
        &ids
    )
}

#[cfg(test)]
mod tests {
    use super::Claimed;
    use crate::checked::fields_of;

    /// `claimed!`'s columns are in `Claimed`'s fields' order: serde reads a packed row by position.
    #[test]
    fn the_claim_packs_its_columns_in_claimed_s_order() {
        let source = include_str!("claim.rs");
        let list = &source[source
            .find("packed!($db, Claimed")
            .expect("claimed!'s list")..];
        let list = &list[..list.find('}').expect("the list's end")];
        // Each pair is `"field" = "column"`: the field is the quoted word before each ` = `.
        let keys: Vec<&str> = list
            .split("\" = ")
            .filter_map(|before| before.rsplit('"').next())
            .take(list.matches("\" = ").count())
            .collect();
        assert_eq!(keys, fields_of::<Claimed>());
        assert_eq!(keys.len(), 21);
    }
}
