//! What every handler is given and gives back, and the helpers they share: one signature for
//! every handler in `crate::handlers` (docs/development.md "Adding a job type").

use jobs_shared::job::job_type::JobType;
use jobs_shared::job::run_details::{Artifact, LlmUse};
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use serde::de::DeserializeOwned;
use serde_json::Value;
use worker::Env;

use crate::outbound::Outbound;
use jobs_store::jobs::Claimed;

/// A handler's outcome (`Ok` carries the result JSON stored on the job), what the attempt
/// cost, in cents, recorded on its run (LLM calls; 0 for most types), failed or not, and
/// whether follow-up jobs in its result may be enqueued: built-in handlers and the team's own
/// app endpoints are trusted, an `http` target only when its job allows it. A handler that
/// could not start its work for want of a shared resource (a browser) gives `release`
/// instead: no attempt is spent and the outcome is ignored. `llm` and `artifacts` go on the
/// attempt's run record (docs/app-guide.md "Run records and artifacts"), whatever its outcome.
pub struct HandlerRun {
    pub outcome: Result<Option<Value>, JobError>,
    pub cost_cents: f64,
    pub follow_ups_trusted: bool,
    pub release: Option<Release>,
    pub llm: Option<LlmUse>,
    pub artifacts: Vec<Artifact>,
}

/// A job handed back unstarted: its claim is undone (queued, no attempt, no run record) and its
/// message comes back after `retry_secs`; `reason` goes on the `job.skipped` line.
#[derive(Clone, Copy, Debug)]
pub struct Release {
    pub retry_secs: u64,
    pub reason: &'static str,
}

impl HandlerRun {
    /// A trusted handler's outcome that cost nothing.
    pub fn of(outcome: Result<Option<Value>, JobError>) -> HandlerRun {
        HandlerRun {
            outcome,
            cost_cents: 0.0,
            follow_ups_trusted: true,
            release: None,
            llm: None,
            artifacts: Vec::new(),
        }
    }

    /// The run with what the attempt produced.
    pub fn with_artifacts(self, artifacts: Vec<Artifact>) -> HandlerRun {
        HandlerRun { artifacts, ..self }
    }

    /// The job did not start (see [`Release`]).
    pub fn released(release: Release) -> HandlerRun {
        HandlerRun {
            release: Some(release),
            ..HandlerRun::of(Ok(None))
        }
    }
}

/// What every handler is given: the claimed job and its type, the Worker's env, the batch's
/// outbound gate (every subrequest goes through it), and the attempt's start (the time a
/// handler reasons in).
pub struct JobContext<'a> {
    pub job: &'a Claimed,
    pub job_type: JobType,
    pub env: &'a Env,
    pub outbound: &'a Outbound<'a>,
    pub started_at: i64,
}

/// A workflow step's inputs, the earlier steps' results by name (docs/app-guide.md
/// "Workflows"); `None` for a job that takes none.
pub fn inputs(job: &Claimed) -> Option<Value> {
    serde_json::from_str(job.inputs.as_deref()?).ok()
}

/// The job's payload as its type's struct (checked at enqueue; this only fails on old rows).
pub fn payload<P: DeserializeOwned>(job: &Claimed) -> Result<P, JobError> {
    serde_json::from_str(&job.payload)
        .map_err(|e| JobError::new(ErrorClass::InvalidPayload, format!("payload: {e}")))
}

/// A request we could not even build is a fault in the job's own data: retrying cannot help.
pub fn invalid_request(e: worker::Error) -> JobError {
    JobError::new(
        ErrorClass::InvalidPayload,
        format!("cannot build the request: {e}"),
    )
}
