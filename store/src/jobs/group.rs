//! A workflow's groups on `jobs` (docs/app-guide.md "Workflows", shared `job::workflow_group`):
//! a group's branches written in the batch that writes the group, the group made due once its
//! branches have ended (by the batch that ended the last, or by the sweep should none have),
//! and the branches read when the group runs. A group waits `scheduled` until then; its
//! branches name it in `group_id`.

use jobs_shared::job::enqueue::NewJob;
use jobs_shared::job::workflow_group::{Branches, MAX_REPORTED_RESULTS_BYTES};
use serde::Serialize;
use serde_json::Value;
use worker::{D1Database, D1PreparedStatement};

use super::claim::Claimed;
use super::unsent::Unsent;
use crate::d1::json_text;

/// One branch to write: its job, its place, and for a `for_each` branch its element.
pub struct Branch {
    pub job: NewJob,
    pub index: u32,
    pub item: Option<Value>,
}

/// A branch as the INSERT reads it.
#[derive(Serialize)]
struct BranchRow<'a> {
    id: &'a str,
    r#type: &'a str,
    family: &'a str,
    status: &'a str,
    priority: i64,
    payload: &'a str,
    max_attempts: u32,
    run_at: i64,
    retry_policy: Option<&'a str>,
    expires_at: Option<i64>,
    branch: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    item: Option<&'a Value>,
}

/// The statements that write `branches` of the group `group_id`, which `step` (this attempt's
/// job) enqueued: rows of at most `max_bytes` of JSON each. Each is guarded by the group's row
/// existing: a replayed record whose group was not written (its step had one already) writes
/// no branches either. A `for_each` branch keeps its `item` and `index` as its inputs; the
/// group's own inputs are added when it is claimed, not copied into every branch.
pub(super) fn branch_inserts(
    db: &D1Database,
    step: &Claimed,
    group_id: &str,
    branches: &[Branch],
    now_ms: i64,
    max_bytes: usize,
) -> worker::Result<Vec<D1PreparedStatement>> {
    let rows: Vec<String> = (branches.iter())
        .map(|b| {
            json_text(&BranchRow {
                id: &b.job.id,
                r#type: b.job.job_type.as_str(),
                family: b.job.family.as_str(),
                status: b.job.initial_status().as_str(),
                priority: b.job.priority,
                payload: &b.job.payload,
                max_attempts: b.job.max_attempts,
                run_at: b.job.run_at_ms,
                retry_policy: b.job.retry_policy.as_deref(),
                expires_at: b.job.expires_at_ms,
                branch: b.index,
                item: b.item.as_ref(),
            })
        })
        .collect();
    let arrays = jobs_shared::job::stored_result::json_arrays(&rows, max_bytes);
    (arrays.into_iter())
        .map(|(_, rows)| {
            sql!(
                db,
                "WITH o AS MATERIALIZED (SELECT value FROM json_each(?1)) \
                 INSERT OR IGNORE INTO jobs (id, type, family, status, priority, payload, \
                 attempts, max_attempts, run_at, created_at, updated_at, group_id, branch, \
                 correlation_id, retry_policy, expires_at, enqueued_by, inputs) \
                 SELECT o.value ->> 'id', o.value ->> 'type', o.value ->> 'family', \
                 o.value ->> 'status', o.value ->> 'priority', o.value ->> 'payload', 0, \
                 o.value ->> 'max_attempts', o.value ->> 'run_at', ?3, ?3, ?2, \
                 o.value ->> 'branch', ?4, o.value ->> 'retry_policy', o.value ->> 'expires_at', \
                 ?5, IIF(o.value -> 'item' IS NULL, NULL, json_object('item', \
                   json(o.value -> 'item'), 'index', o.value ->> 'branch')) \
                 FROM o JOIN jobs g ON g.id = ?2",
                &rows,
                group_id,
                now_ms,
                step.correlation(),
                step.enqueued_by.as_deref()
            )
        })
        .collect()
}

/// Groups whose branches have all ended, or (failing fast) one of which ended without
/// succeeding, made due now: `queued` with no send recorded, returned to be sent at once (rows:
/// [`Unsent`]), a lost send left to the sweep's outbox. `among` narrows them to those groups
/// (the consumer's record, after the branches' ends it writes: of two batches ending a group's
/// last two branches, the one that commits second sees both ended and makes it due, once);
/// `None` takes up to `limit` of any (the sweep's recovery of a group whose last branch ended
/// on a path that does not join: an operator's move, an expiry or lost attempt the claim
/// found, a DLQ arrival). Read through `jobs_open_groups`.
pub fn job_join_groups(
    db: &D1Database,
    among: Option<&[&str]>,
    now_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    let ids = among.map(json_text);
    sql!(db, Unsent =>
        "UPDATE jobs SET status = 'queued', run_at = ?2, sent_at = NULL, updated_at = ?2 \
         WHERE id IN (SELECT g.id FROM jobs AS g INDEXED BY jobs_open_groups \
           WHERE type = 'group' AND status = 'scheduled' \
           AND (?1 IS NULL OR g.id IN (SELECT value FROM json_each(?1))) \
           AND (NOT EXISTS (SELECT 1 FROM jobs b INDEXED BY jobs_group_branches \
             WHERE b.group_id IS NOT NULL AND b.group_id = g.id AND b.finished_at IS NULL) \
           OR (g.payload ->> 'on_failure' IS NOT 'continue' AND EXISTS (SELECT 1 FROM jobs b \
             INDEXED BY jobs_group_branches WHERE b.group_id IS NOT NULL \
             AND b.group_id = g.id AND b.finished_at IS NOT NULL AND b.status <> 'succeeded'))) \
           LIMIT ?3) \
         AND status = 'scheduled' \
         RETURNING id, type AS job_type, family, priority, run_at, correlation_id",
        ids.as_deref(),
        now_ms,
        limit
    )
}

/// The branches of group `group_id` as the group reads them when it runs: their counts, the
/// first that ended without succeeding, and each one's end in order (its id, status, and result
/// or error) while the ends so far fit `MAX_REPORTED_RESULTS_BYTES`, past that its id and status
/// only (`cut`).
pub async fn job_list_branch_ends(
    db: &D1Database,
    group_id: &str,
) -> worker::Result<Option<Branches>> {
    let budget = MAX_REPORTED_RESULTS_BYTES as i64;
    sql!(db, Branches =>
        "SELECT COUNT(*) AS \"count!: i64\", \
         COALESCE(SUM(finished_at IS NULL), 0) AS \"live!: i64\", \
         COALESCE(SUM(status = 'succeeded'), 0) AS \"succeeded!: i64\", \
         (SELECT 'branch ' || f.branch || ' (' || f.type || ', ' || f.id || ') ended ' \
           || f.status || ': ' || COALESCE(f.last_error, 'no error recorded') \
           FROM jobs f INDEXED BY jobs_group_branches WHERE f.group_id IS NOT NULL \
           AND f.group_id = ?1 AND f.finished_at IS NOT NULL AND f.status <> 'succeeded' \
           ORDER BY f.branch LIMIT 1) AS \"failure?: String\", \
         COALESCE(MAX(upto > ?2), 0) AS \"cut!: i64\", \
         json_group_array(json(IIF(upto <= ?2, entry, \
           json_object('id', id, 'status', status)))) AS \"results!: String\" \
         FROM (SELECT id, status, finished_at, entry, \
           SUM(length(entry)) OVER (ORDER BY branch) AS upto \
           FROM (SELECT id, branch, status, finished_at, IIF(status = 'succeeded', \
             json_object('id', id, 'status', status, 'result', json(COALESCE(result, 'null'))), \
             json_object('id', id, 'status', status, 'error', last_error)) AS entry \
             FROM jobs INDEXED BY jobs_group_branches WHERE group_id IS NOT NULL \
             AND group_id = ?1) \
           ORDER BY branch)",
        group_id,
        budget
    )?
    .first(None)
    .await
}
