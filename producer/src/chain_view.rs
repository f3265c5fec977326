//! A job's place in a chain, for GET /v1/jobs/{id}: a step shows its parent; a parent shows the
//! chain's status, why it failed, and every step (run, running, or still pending).

use serde::Deserialize;
use serde_json::{json, Map, Value};
use worker::D1Database;

#[derive(Deserialize)]
struct ChainRow {
    parent_id: Option<String>,
    chain_step: Option<i64>,
    chain_status: Option<String>,
    chain_error: Option<String>,
    next_steps: Option<String>,
    #[serde(rename = "type")]
    job_type: String,
    status: String,
}

#[derive(Deserialize)]
struct StepRow {
    id: String,
    #[serde(rename = "type")]
    job_type: String,
    status: String,
    chain_step: i64,
    next_steps: Option<String>,
}

/// The chain fields of job `id` (none when it is in no chain), read in one round trip.
pub async fn fields(db: &D1Database, id: &str) -> worker::Result<Map<String, Value>> {
    let job = db
        .prepare(
            "SELECT parent_id, chain_step, chain_status, chain_error, next_steps, type, status \
             FROM jobs WHERE id = ?1",
        )
        .bind(&[id.into()])?;
    let steps = db
        .prepare(
            "SELECT id, type, status, chain_step, next_steps FROM jobs WHERE parent_id = ?1 \
             ORDER BY chain_step",
        )
        .bind(&[id.into()])?;
    let results = db.batch(vec![job, steps]).await?;
    let mut out = Map::new();
    let Some(job) = results[0].results::<ChainRow>()?.into_iter().next() else {
        return Ok(out);
    };
    if let Some(parent) = &job.parent_id {
        out.insert("parent_id".into(), json!(parent));
        out.insert("chain_step".into(), json!(job.chain_step));
    }
    let Some(chain_status) = &job.chain_status else {
        return Ok(out);
    };
    let children: Vec<StepRow> = results[1].results()?;
    let mut steps =
        vec![json!({ "step": 0, "id": id, "type": job.job_type, "status": job.status })];
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
    Ok(out)
}
