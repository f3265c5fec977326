//! POST /v1/jobs/{id}/cancel: the app that enqueued a job cancels it, or with `{"chain": true}`
//! its whole chain (docs/app-guide.md "Cancel from the app"). Only the token that enqueued the
//! job (its name, the job's `enqueued_by`; a chain's steps inherit it) may, or an admin token;
//! any other is answered that no such job exists, as a fenced token is. A waiting job ends
//! `cancelled`; a running one `skipped` at once, its attempt's record ended there and what the
//! attempt does after ignored, as an operator's skip; a chain fails naming the step, and
//! nothing after it runs. One move, audited, as the operator's (store `job_move_one`).

use jobs_shared::job::lifecycle::JobStatus;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::security::auth::Caller;
use jobs_store::jobs::{self, job_get_by_id, job_list_chain_steps, MovedBy, OperatorMove};
use serde_json::{json, Value};
use worker::{Env, Response};

use crate::admin::jobs::summary;
use crate::admin::{d1, Admin};
use crate::job_view::no_such_job;
use crate::request::Request;
use crate::{body, respond};

pub async fn post(
    env: &Env,
    caller: &Caller,
    req: &mut Request,
    id: &str,
) -> Result<Response, ApiError> {
    let chain = match body::object_or_none(req, &["chain"]).await?.get("chain") {
        None => false,
        Some(Value::Bool(chain)) => *chain,
        Some(_) => return Err(unfit("chain", "must be true or false")),
    };
    let db = d1::database(env)?;
    let job = job_get_by_id(&db, id)
        .await?
        .ok_or_else(|| no_such_job(id))?;
    if !caller.may_see(&job.job_type, job.enqueued_by.as_deref()) {
        return Err(no_such_job(id));
    }
    let (target, status) = if chain {
        if job.parent_id.is_none() && job.chain_status.is_none() {
            let message = format!("job {id} is in no chain: cancel it without \"chain\"");
            return Err(unfit("chain", message));
        }
        // The chain's one live step, if any: its parent (the first step, read again only when it
        // is not this job) or a later one.
        let (first, steps) = match job.parent_id.as_deref() {
            None => (
                Some((job.id.clone(), job.status.clone())),
                job_list_chain_steps(&db, &job.id).await?,
            ),
            Some(root) => {
                let (first, steps) =
                    futures::join!(job_get_by_id(&db, root), job_list_chain_steps(&db, root));
                (first?.map(|j| (j.id, j.status)), steps?)
            }
        };
        let steps = steps.into_iter().map(|s| (s.id, s.status));
        let live = first
            .into_iter()
            .chain(steps)
            .find(|(_, status)| JobStatus::parse(status).is_some_and(JobStatus::is_live));
        live.ok_or_else(|| {
            let message = "the chain has ended: no step is left to cancel";
            ApiError::new(409, "not_live", message).with_field("chain")
        })?
    } else {
        (job.id.clone(), job.status.clone())
    };
    // A running job cannot be cancelled under the state machine: it is skipped, its run ended.
    let mv = match JobStatus::parse(&status) {
        Some(JobStatus::Running) => OperatorMove::Skip,
        _ => OperatorMove::Cancel,
    };
    let actor = Admin {
        env,
        actor: caller.name.clone(),
    };
    let entry = actor.entry_at(
        "job.cancel_by_app",
        json!({ "id": target, "chain": chain }),
        crate::env_config::now_ms(),
    );
    let changed = jobs::job_move_one(&db, &target, mv, MovedBy::App, &entry).await?;
    match (changed.job, changed.prior) {
        (Some(moved), _) => respond::json(200, &json!({ "job": summary(&moved), "chain": chain })),
        (None, prior) => {
            let from = prior.map_or("gone", |s| s.as_str());
            let message = format!("job {target} is {from}: only a live job can be cancelled");
            Err(ApiError::new(409, "not_live", message).with_field("id"))
        }
    }
}

/// A 422 naming `field`.
fn unfit(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::new(422, "invalid_field", message).with_field(field)
}
