//! A job's place in a chain, for GET /v1/jobs/{id}: a step shows its parent; a parent shows the
//! chain's status, why it failed, every step (run, running, or still pending), which phases
//! succeeded, failed or did not run, and the outcome (`partial` when it failed part way).
//! A token fenced to some job types (docs/http-api.md "Scoped tokens") sees a step of another type
//! by its number and status only, and no chain error when the chain has such a step.

use jobs_shared::job::chain::ChainPhases;
use jobs_shared::security::auth::Caller;
use jobs_store::jobs::{ChainStep, JobRow};
use serde_json::{json, Map, Value};

/// The chain fields of `job` (none when it is in no chain), given its `children` steps, as
/// `caller` may see them.
pub fn fields(job: &JobRow, children: &[ChainStep], caller: &Caller) -> Map<String, Value> {
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
    let phases = ChainPhases::of(
        steps
            .iter()
            .filter_map(|s| Some((s["step"].as_u64()? as u32, s["status"].as_str()?))),
    );
    let mut error = job.chain_error.as_deref();
    for step in &mut steps {
        if !step["type"].as_str().is_none_or(|t| caller.may_read(t)) {
            step["id"] = Value::Null;
            step["type"] = Value::Null;
            // The error may be that step's, and name its type.
            error = None;
        }
    }
    out.insert(
        "chain".into(),
        json!({
            "status": chain_status, "outcome": phases.outcome(chain_status),
            "error": error, "steps": steps, "phases": phases,
        }),
    );
    out
}
