//! A job's place in a chain, for GET /v1/jobs/{id}: a step shows its parent; a parent shows the
//! chain's status, why it failed, every step (run, running, or still pending), which phases
//! succeeded, failed or did not run, and the outcome (`partial` when it failed part way).
//! A job shows its step `name` and, as a workflow's step, its `inputs` (docs/app-guide.md
//! "Workflows"). A token fenced to some job types (docs/http-api.md "Scoped tokens") sees a step
//! of another type by its number and status only, no chain error when the chain has such a step,
//! and no inputs (another type's results may be among them).

use jobs_shared::job::chain::ChainPhases;
use jobs_shared::security::auth::Caller;
use jobs_shared::util::time_fmt::rfc3339;
use jobs_store::jobs::{ChainStep, JobRow};
use serde_json::{json, Map, Value};

/// The chain fields of `job` (none when it is in no chain), given its `children` steps, as
/// `caller` may see them.
pub fn fields(job: &JobRow, children: &[ChainStep], caller: &Caller) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(name) = &job.step_name {
        out.insert("name".into(), json!(name));
    }
    if let (Some(inputs), None) = (&job.inputs, &caller.types) {
        out.insert(
            "inputs".into(),
            serde_json::from_str(inputs).unwrap_or(Value::Null),
        );
    }
    if let (Some(group), Some(branch)) = (&job.group_id, job.branch) {
        out.insert("group_id".into(), json!(group));
        out.insert("branch".into(), json!(branch));
    }
    if let Some(parent) = &job.parent_id {
        out.insert("parent_id".into(), json!(parent));
        out.insert("chain_step".into(), json!(job.chain_step));
    }
    let Some(chain_status) = &job.chain_status else {
        return out;
    };
    let first = json!({ "step": 0, "id": job.id, "type": job.job_type, "status": job.status,
        "name": job.step_name, "run_at": rfc3339(job.run_at) });
    let mut steps = vec![first];
    // A written step says when it is due, a group how its branches stand, a wait what for.
    steps.extend(children.iter().map(|s| {
        let mut step = json!({ "step": s.chain_step, "id": s.id, "type": s.job_type,
            "status": s.status, "name": s.step_name, "run_at": rfc3339(s.run_at) });
        let parse =
            |text: &Option<String>| text.as_deref().and_then(|t| serde_json::from_str(t).ok());
        if let Some(branches) = parse(&s.branches) {
            step["branches"] = branches;
        }
        if let Some(waits_for) = parse(&s.wait_for) {
            step["waits_for"] = waits_for;
        }
        step
    }));
    // What the latest step still carries has not been enqueued yet.
    let (last_step, carried) = match children.last() {
        Some(s) => (s.chain_step, s.next_steps.as_deref()),
        None => (0, job.next_steps.as_deref()),
    };
    let pending: Vec<Value> = carried
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    steps.extend(pending.iter().zip(last_step + 1..).map(|(spec, n)| {
        json!({ "step": n, "id": null, "type": spec.get("type"), "status": "pending",
            "name": spec.get("name") })
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
            step["name"] = Value::Null;
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
