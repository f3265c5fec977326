//! A consumer batch's claim: one round trip moves every claimable job of the batch to
//! `running` (two when a message claims nothing at first), and the heartbeat extends the
//! leases of those it still runs.

use std::collections::HashSet;
use std::sync::LazyLock;

use jobs_shared::job::chain::ChainColumns;
use jobs_shared::job::enqueue::EXPIRED_UNRUN;
use jobs_shared::job::family::Family;
use jobs_shared::job::lease::LOST_ATTEMPT;
use jobs_shared::job::lifecycle::sources_of;
use jobs_shared::job::lifecycle::JobStatus::{Dead, Running, Skipped};
use jobs_shared::observe::d1_stats::D1Stats;
use jobs_shared::retry::error_class::ErrorClass::{Expired, LeaseExpired};
use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::{counted_batch, json, num};
use crate::job_runs::record_lost_attempts_sql;
use crate::sql::status_list;
use crate::sql::PAUSED_JOB_SQL;

/// Messages may arrive a little before their delay ends; this much early is still "due".
const EARLY_TOLERANCE_MS: i64 = 1_000;

/// A job this batch now runs, read from the claim's packed row: its fields in the order of
/// [`CLAIMED_COLUMNS`] (see `StatementResult::packed_results`).
#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
pub struct Claimed {
    pub id: String,
    #[serde(rename = "type")]
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
}

/// The columns of a [`Claimed`], in its fields' order: the claim returns them packed into one
/// JSON array per row.
const CLAIMED_COLUMNS: &str = "id, type, payload, attempts, max_attempts, runs, parent_id, \
     chain_step, next_steps, chain_status, correlation_id, retry_policy, enqueued_by, \
     created_at, run_at";

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
#[derive(Deserialize)]
pub struct Exhausted {
    pub id: String,
    #[serde(rename = "type")]
    pub job_type: String,
    pub attempts: u32,
    pub correlation_id: Option<String>,
    /// A dead step fails its chain.
    #[serde(flatten)]
    pub chain: ChainColumns,
}

/// A job whose `expires_at` passed before it started: the claim ends it `skipped` instead of
/// running it (no attempt spent, no run record).
#[derive(Deserialize)]
pub struct PastExpiry {
    #[serde(flatten)]
    pub job: Exhausted,
    pub expires_at: i64,
}

/// A job the claim ended instead of running, `dead` ([`Exhausted`]) or `skipped`
/// ([`PastExpiry`]), or held for a pause (`status` `held`).
#[derive(Deserialize)]
struct Ended {
    #[serde(flatten)]
    job: Exhausted,
    expires_at: Option<i64>,
    status: String,
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
/// Claimable: a state the state machine lets into `running`, or `running` whose lease ran out
/// (its worker died). Claiming also proves the job's message left the outbox. Only a message
/// from the job's current family's queue claims it: after a promotion the old one is stale.
/// Why a message claimed nothing is read in the batch's record round trip
/// (`job_set_outcome_many`), for those ids only.
///
/// One statement claims what is plainly runnable: due, queued or retrying, not expired, not
/// paused. That is every message of a usual batch, and then it is the whole claim: each
/// statement of a batch is work of its own for D1, whatever it touches. Only when some message
/// claimed nothing does a second round trip settle those ids ([`job_claim_settling`]): a lost
/// lease to record and rescue, an expired or paused job, a stale or early message.
pub async fn job_claim(
    db: &D1Database,
    ids: &[&str],
    terms: &ClaimTerms<'_>,
    stats: &mut D1Stats,
) -> worker::Result<Claim> {
    let plain = claim_statement(db, &CLAIM_SQL.plain, json(ids), terms)?;
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
/// The unary `+` on the status and run_at terms keeps SQLite on the primary key: it cannot see
/// how short a `json_each` list is and would otherwise scan the whole backlog by status.
async fn job_claim_settling(
    db: &D1Database,
    ids: &[&str],
    terms: &ClaimTerms<'_>,
    stats: &mut D1Stats,
) -> worker::Result<Claim> {
    let sql = &*CLAIM_SQL;
    let &ClaimTerms {
        family,
        now_ms,
        found_by,
        ..
    } = terms;
    let ids_json = json(ids);
    let family_name = JsValue::from_str(family.as_str());
    let record_lost = db.prepare(&sql.record_lost).bind(&[
        ids_json.clone(),
        num(now_ms),
        family_name.clone(),
        JsValue::from_str(found_by),
    ])?;
    let end = db.prepare(&sql.end).bind(&[
        ids_json.clone(),
        num(now_ms),
        family_name,
        num(terms.due_ms()),
    ])?;
    let claim = claim_statement(db, &sql.settling, ids_json, terms)?;
    let results = counted_batch(db, vec![record_lost, end, claim], stats).await?;
    let (mut exhausted, mut expired, mut held) = (Vec::new(), Vec::new(), Vec::new());
    for ended in results[1].results::<Ended>()? {
        match (ended.status.as_str(), ended.expires_at) {
            (status, _) if status == Dead.as_str() => exhausted.push(ended.job),
            (status, Some(expires_at)) if status == Skipped.as_str() => expired.push(PastExpiry {
                job: ended.job,
                expires_at,
            }),
            _ => held.push(Held { id: ended.job.id }),
        }
    }
    Ok(Claim {
        exhausted,
        expired,
        claimed: results[2].packed_results()?,
        held,
    })
}

/// One of the two claim UPDATEs (`sql`), bound: ?1 the ids (a JSON array), ?2 now, ?3 lease
/// end, ?4 due, ?5 family.
fn claim_statement(
    db: &D1Database,
    sql: &str,
    ids: JsValue,
    terms: &ClaimTerms<'_>,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(sql).bind(&[
        ids,
        num(terms.now_ms),
        num(terms.lease_until),
        num(terms.due_ms()),
        JsValue::from_str(terms.family.as_str()),
    ])
}

/// The claim's SQL (see [`job_claim`]), built once per isolate: every consumer batch runs it.
static CLAIM_SQL: LazyLock<ClaimSql> = LazyLock::new(ClaimSql::build);

struct ClaimSql {
    /// The claim of what is plainly runnable, alone in its round trip.
    plain: String,
    /// The settling batch's three statements, for the ids the plain claim missed.
    record_lost: String,
    end: String,
    settling: String,
}

impl ClaimSql {
    fn build() -> ClaimSql {
        let claimable = status_list(&sources_of(Running));
        // A running job whose lease ran out: its worker died.
        let ran_out = format!("+status = '{Running}' AND lease_until < ?2");
        // A job the claim may start: claimable, or lost by a dead worker.
        let runnable = format!("(+status IN ({claimable}) OR ({ran_out}))");
        let lost = format!("id IN (SELECT value FROM json_each(?1)) AND {ran_out} AND family = ?3");
        // A lost attempt that was the job's last.
        let exhausted = format!("{ran_out} AND attempts >= max_attempts");
        // Before the claim, so what it ends or holds is no longer claimable: a lost attempt
        // that was the job's last (`dead`), a claimable job past its `expires_at`
        // (`skipped`), a due one a pause covers (`held`: its status stays). SET reads the
        // row as it was.
        let to = format!(
            "(CASE WHEN {exhausted} THEN '{Dead}' \
             WHEN expires_at <= ?2 THEN '{Skipped}' ELSE 'held' END)"
        );
        // The claim of the jobs `which` selects.
        let claim = |which: &str| {
            format!(
                "UPDATE jobs SET status = '{Running}', attempts = attempts + 1, runs = runs + 1, started_at = ?2, \
                 updated_at = ?2, lease_until = ?3, sent_at = COALESCE(sent_at, ?2) \
                 WHERE id IN (SELECT value FROM json_each(?1)) AND +run_at <= ?4 \
                 AND {which} \
                 AND family = ?5 AND NOT {PAUSED_JOB_SQL} \
                 RETURNING json_array({CLAIMED_COLUMNS}) AS j"
            )
        };
        ClaimSql {
            plain: claim(&format!(
                "+status IN ({claimable}) AND (expires_at IS NULL OR expires_at > ?2)"
            )),
            record_lost: record_lost_attempts_sql("?2", &lost, "?4"),
            end: format!(
                "UPDATE jobs SET status = IIF({to} = 'held', status, {to}), \
                 finished_at = IIF({to} = 'held', finished_at, ?2), \
                 lease_until = IIF({to} = 'held', lease_until, NULL), \
                 updated_at = IIF({to} = 'held', updated_at, ?2), \
                 error_class = CASE {to} WHEN '{Dead}' THEN '{LeaseExpired}' \
                 WHEN '{Skipped}' THEN '{Expired}' ELSE error_class END, \
                 last_error = CASE {to} WHEN '{Dead}' THEN '{LOST_ATTEMPT}' \
                 WHEN '{Skipped}' THEN '{EXPIRED_UNRUN}' ELSE last_error END, \
                 escalated_at = IIF({to} = '{Dead}', NULL, escalated_at), \
                 sent_at = CASE {to} WHEN '{Dead}' THEN sent_at WHEN 'held' THEN ?2 \
                 ELSE COALESCE(sent_at, ?2) END, \
                 held_at = IIF({to} = 'held', ?2, held_at) \
                 WHERE id IN (SELECT value FROM json_each(?1)) AND family = ?3 \
                 AND (({exhausted}) OR ({runnable} \
                 AND (expires_at <= ?2 OR (+run_at <= ?4 AND {PAUSED_JOB_SQL})))) \
                 RETURNING id, type, attempts, correlation_id, parent_id, chain_step, chain_status, \
                 expires_at, IIF(status IN ('{Dead}', '{Skipped}'), status, 'held') AS status"
            ),
            settling: claim(&runnable),
        }
    }
}

/// Extends the lease of jobs a live batch is still running (the heartbeat): guarded by the
/// run, so a job another attempt took over is left alone.
pub async fn job_extend_leases(
    db: &D1Database,
    jobs: &[(&str, u32)],
    lease_until: i64,
    stats: &mut D1Stats,
) -> worker::Result<()> {
    let extend = db
        .prepare(format!(
            "UPDATE jobs SET lease_until = ?2 FROM json_each(?1) o \
             WHERE jobs.id = o.value ->> 0 AND +jobs.status = '{Running}' AND jobs.runs = o.value ->> 1"
        ))
        .bind(&[json(jobs), num(lease_until)])?;
    counted_batch(db, vec![extend], stats).await.map(|_| ())
}

/// The state of the jobs `ids` (rows: [`Seen`]): read for messages that claimed nothing.
pub(super) fn job_list_seen(db: &D1Database, ids: &[&str]) -> worker::Result<D1PreparedStatement> {
    db.prepare(
        "SELECT id, status, run_at, lease_until, family FROM jobs \
         WHERE id IN (SELECT value FROM json_each(?1))",
    )
    .bind(&[json(ids)])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packed row is read by position: it must give what the same columns by name give.
    #[test]
    fn claimed_columns_are_in_the_order_of_its_fields() {
        let values = [
            r#""i""#, r#""t""#, r#""p""#, "1", "2", "3", r#""pa""#, "4", r#""n""#, r#""cs""#,
            r#""c""#, r#""r""#, r#""e""#, "5", "6",
        ];
        let names: Vec<&str> = CLAIMED_COLUMNS.split(',').map(str::trim).collect();
        assert_eq!(names.len(), values.len());
        let by_name: Vec<String> = (names.iter().zip(values))
            .map(|(name, value)| format!(r#""{name}":{value}"#))
            .collect();
        let by_name: Claimed = serde_json::from_str(&format!("{{{}}}", by_name.join(","))).unwrap();
        let packed: Claimed = serde_json::from_str(&format!("[{}]", values.join(","))).unwrap();
        assert_eq!(packed, by_name);
        assert_eq!(
            (packed.id.as_str(), packed.runs, packed.run_at),
            ("i", 3, 6)
        );
    }
}
