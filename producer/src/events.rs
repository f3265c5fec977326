//! POST /v1/events: the app posts an event, and every workflow `wait` step waiting for its event
//! and key resumes now with the event's `data` (docs/app-guide.md "Workflows"): only the waits
//! of jobs the calling token enqueued (an admin token: anyone's), as a cancel from the app. One
//! D1 statement (store `job_resume_waits`), then the resumed waits are sent; one whose send
//! fails is in the outbox, for the sweep.

use jobs_shared::job::workflow_wait::Event;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::runtime::queue_send::queue_delay_limit;
use jobs_shared::security::auth::{Caller, Scope};
use jobs_store::jobs::{job_resume_waits, Unsent};
use serde_json::json;
use worker::{Env, Response};

use crate::admin::d1;
use crate::request::Request;
use crate::{body, dispatch, env_config, respond};

pub async fn post(env: &Env, caller: &Caller, req: &mut Request) -> Result<Response, ApiError> {
    let event = Event::parse(&body::json(req).await?)?;
    let owner = (caller.scope != Scope::Admin).then_some(caller.name.as_str());
    let now = env_config::now_ms();
    let resume = job_resume_waits(&d1::database(env)?, &event, owner, now)?;
    let resumed: Vec<Unsent> = resume.all().await?.results()?;
    let limit = queue_delay_limit(env);
    let outgoing: Vec<_> = (resumed.iter())
        .filter_map(|job| dispatch::outgoing(job, now, limit, false))
        .collect();
    dispatch::send_all(env, &outgoing).await;
    let ids: Vec<&str> = resumed.iter().map(|job| job.id.as_str()).collect();
    respond::json(200, &json!({ "resumed": ids.len(), "jobs": ids }))
}
