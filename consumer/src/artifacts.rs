//! Where a run's artifacts are kept (docs/app-guide.md "Run records and artifacts"): a small one
//! inline on its run record, a larger one in the R2 bucket `ARTIFACTS` under a key of its own job
//! and run, so a retry never overwrites an earlier attempt's.

use jobs_shared::job::run_details::{Artifact, ArtifactBody, Placement};
use jobs_shared::observe::log_line::{fault, LogLevel};
use worker::HttpMetadata;

use crate::job_context::JobContext;

/// Keeps `made`, an artifact of the attempt in `ctx`, and describes it. Without the bucket, or
/// when R2 refuses it, its start is kept inline, marked `truncated`.
pub async fn keep(ctx: &JobContext<'_>, made: &ArtifactBody<'_>) -> Artifact {
    let bucket = ctx.env.bucket("ARTIFACTS").ok();
    let (job, run) = (&ctx.job.id, ctx.job.runs);
    let (content_type, body) = (made.content_type, made.body);
    let place = |has_bucket| Artifact::place(made, job, run, has_bucket);
    let (artifact, placement) = place(bucket.is_some());
    let (Placement::Stored(key), Some(bucket)) = (&placement, bucket) else {
        return artifact;
    };
    let metadata = HttpMetadata {
        content_type: Some(content_type.to_string()),
        ..HttpMetadata::default()
    };
    match bucket
        .put(key, body.to_string())
        .http_metadata(metadata)
        .execute()
        .await
    {
        Ok(_) => artifact,
        Err(e) => {
            let message =
                format_args!("R2 put {key} failed ({e}): the artifact is kept cut, inline");
            fault(LogLevel::Warn, "artifacts", message);
            place(false).0
        }
    }
}
