//! A job's place in a chain, for GET /v1/jobs/{id}: a step shows its parent; a parent shows the
//! chain's status, why it failed, and every step (run, running, or still pending).

use serde::Deserialize;
use serde_json::{json, Map, Value};
use worker::D1Database;

use crate::job_store::JobRow;

#[derive(Deserialize)]
pub struct StepRow {
    id: String,
    #[serde(rename = "type")]
    job_type: String,
    status: String,
    chain_step: i64,
    next_steps: Option<String>,
}

/// The steps of the chain job `id` heads, in order (none unless it heads one). The job's own
/// chain columns come with its row (crate::job_store::find), read alongside.
pub async fn steps(db: &D1Database, id: &str) -> worker::Result<Vec<StepRow>> {
    db.prepare(
        "SELECT id, type, status, chain_step, next_steps FROM jobs WHERE parent_id = ?1 \
         ORDER BY chain_step",
    )
    .bind(&[id.into()])?
    .all()
    .await?
    .results()
}

/// The chain fields of `job` (none when it is in no chain), given its `children` steps.
pub fn fields(job: &JobRow, children: &[StepRow]) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(parent) = &job.parent_id {
        out.insert("parent_id".into(), json!(parent));
        out.insert("chain_step".into(), json!(job.chain_step));
    }
    let Some(chain_status) = &job.chain_status else {
        return out;
    };
    let mut steps =
        vec![json!({ "step": 0, "id": job.id, "type": job.job_type, "status": job.status })];
    steps.extend(children.iter().map(
        |s| json!({ "step": s.chain_step, "id": s.id, "type": s.job_type, "status": s.status }),
    ));
    // What the latest step still carries has not been enqueued yet.
    let (last_step, carried) = match children.last() {
        Some(s) => (s.chain_step, s.next_steps.as_deref()),
        None => (0, job.next_steps.as_deref()),
    };
    let pending: Vec<Value> = carried
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    steps.extend(pending.iter().zip(last_step + 1..).map(|(spec, step)| {
        json!({ "step": step, "id": null, "type": spec.get("type"), "status": "pending" })
    }));
    out.insert(
        "chain".into(),
        json!({ "status": chain_status, "error": job.chain_error, "steps": steps }),
    );
    out
}
