//! The `group` type: a workflow's fan-in (docs/app-guide.md "Workflows"). It runs once its
//! branches have ended (or, failing fast, one of them failed), reads them in one query, and
//! ends as `jobs_shared::job::workflow_group::group_end` says: its report of the branches as
//! its result, for the step after it, or dead naming the branch that failed it.

use jobs_shared::job::workflow_group::{group_end, GroupEnd, GroupPayload};
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use jobs_store::jobs::job_list_branch_ends;
use serde_json::Value;

use crate::job_context::{HandlerRun, JobContext, Release};

/// A group run while branches are still live (an operator ran it early): it looks again then.
const LOOK_AGAIN: Release = Release {
    retry_secs: 300,
    reason: "branches_running",
};

pub async fn run(ctx: &JobContext<'_>) -> HandlerRun {
    match group_end_of(ctx).await {
        Ok(GroupEnd::Waiting { .. }) => HandlerRun::released(LOOK_AGAIN),
        Ok(GroupEnd::Failed(message)) => {
            HandlerRun::of(Err(JobError::new(ErrorClass::BranchFailed, message)))
        }
        Ok(GroupEnd::Done(report)) => HandlerRun::of(Ok(Some(report))),
        Err(e) => HandlerRun::of(Err(e)),
    }
}

/// The group's end, from its payload's `on_failure` and its branches as D1 has them now.
async fn group_end_of(ctx: &JobContext<'_>) -> Result<GroupEnd, JobError> {
    let payload: Value = serde_json::from_str(&ctx.job.payload).unwrap_or_default();
    let group = GroupPayload::parse(&payload).map_err(|e| {
        let message = format!("payload.{}: {}", e.field, e.message);
        JobError::new(ErrorClass::InvalidPayload, message)
    })?;
    let failed = |e: worker::Error| {
        JobError::new(
            ErrorClass::Internal,
            format!("reading the branches failed: {e}"),
        )
    };
    let db = ctx.env.d1("DB").map_err(failed)?;
    // An aggregate's one row is always there.
    let branches = (job_list_branch_ends(&db, &ctx.job.id).await)
        .and_then(|row| row.ok_or_else(|| worker::Error::RustError("no row".into())))
        .map_err(failed)?;
    Ok(group_end(&branches, group.on_failure))
}
