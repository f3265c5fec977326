//! `screenshot_capture`: a page captured by the Browser Rendering binding
//! (`SCREENSHOT_MODE=binding`, the default) or its REST endpoint (`rest`), stored in the R2
//! bucket `SCREENSHOTS` under `screenshots/<job id>/<run>.<png|jpg>`, one object per attempt
//! (the run's artifact); the result names the latest object, its size and the pixel
//! dimensions read from the image's own header. At most 3 run at once:
//! the screenshot family's queue consumer has batch size 1 and max_concurrency 3. When the
//! browser service answers 429 (every browser of the account busy) the job waits for a slot:
//! released unstarted, no attempt spent (docs/app-guide.md "Screenshots").

mod browser;
mod cdp_session;
mod rest;
mod stop;

use std::collections::HashMap;

use jobs_shared::handlers::image_size::image_info;
use jobs_shared::handlers::screenshot::{
    content_type, screenshot_key, screenshot_metadata, Capture, CaptureMode,
};
use jobs_shared::job::payloads::ScreenshotCapturePayload;
use jobs_shared::job::run_details::Artifact;
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use serde_json::{json, Value};
use worker::HttpMetadata;

use crate::job_context::{self, HandlerRun, JobContext, Release};
use jobs_shared::runtime::vars;
use stop::Stop;

/// The wait for a browser slot when the service's 429 names none (Retry-After wins).
const BROWSER_BUSY_RETRY_SECS: u64 = 10;

pub async fn run(ctx: &JobContext<'_>) -> HandlerRun {
    match capture(ctx).await {
        Ok((result, artifact)) => HandlerRun::of(Ok(Some(result))).with_artifacts(vec![artifact]),
        Err(Stop::Failed(e)) => HandlerRun::of(Err(e)),
        Err(Stop::Busy(e)) => HandlerRun::released(Release {
            retry_secs: e.retry_after_secs.unwrap_or(BROWSER_BUSY_RETRY_SECS),
            reason: "browser_busy",
        }),
    }
}

async fn capture(ctx: &JobContext<'_>) -> Result<(Value, Artifact), Stop> {
    let (job, job_type, env, outbound) = (ctx.job, ctx.job_type, ctx.env, ctx.outbound);
    let payload: ScreenshotCapturePayload = job_context::payload(job)?;
    let capture = Capture::new(payload, job_type.spec().timeout_ms);
    let mode = CaptureMode::parse(vars::string(env, "SCREENSHOT_MODE").as_deref())?;
    let bucket = env.bucket("SCREENSHOTS").map_err(|_| {
        JobError::new(
            ErrorClass::NotConfigured,
            "no SCREENSHOTS bucket binding ([[r2_buckets]] in wrangler.toml)",
        )
    })?;
    let (bytes, page) = match mode {
        CaptureMode::Binding => {
            let shot = browser::capture(&capture, env).await?;
            (shot.bytes, Some((shot.status, shot.final_url)))
        }
        CaptureMode::Rest => (
            rest::capture(&capture, env, outbound)
                .await
                .map_err(Stop::of_service)?,
            None,
        ),
    };
    outbound.add_received(bytes.len());
    let info = image_info(&bytes)
        .filter(|info| info.format == capture.format)
        .ok_or_else(|| {
            JobError::new(
                ErrorClass::Internal,
                format!(
                    "the browser's answer ({} bytes) is not a {} image",
                    bytes.len(),
                    content_type(capture.format)
                ),
            )
        })?;
    let key = screenshot_key(&job.id, job.runs, info.format);
    let size = bytes.len();
    let metadata = HttpMetadata {
        content_type: Some(content_type(info.format).to_string()),
        ..HttpMetadata::default()
    };
    let custom = HashMap::from(screenshot_metadata(&job.id, &capture.url));
    bucket
        .put(&key, bytes)
        .http_metadata(metadata)
        .custom_metadata(custom)
        .execute()
        .await
        .map_err(|e| JobError::new(ErrorClass::Internal, format!("R2 put {key}: {e}")))?;
    let (status, final_url) = page.unzip();
    let artifact = Artifact::stored("screenshot", content_type(info.format), size, key.clone())
        .with("width", info.width)
        .with("height", info.height);
    let result = json!({
        "key": key,
        "size": size,
        "width": info.width,
        "height": info.height,
        "format": info.format,
        "content_type": content_type(info.format),
        "url": capture.url,
        "final_url": final_url,
        "status": status,
        "mode": mode.as_str(),
    });
    Ok((result, artifact))
}
