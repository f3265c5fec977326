//! A screenshot through the Browser Rendering binding `BROWSER`: one browser session per
//! attempt, driven over CDP (cdp_session.rs). A fresh tab at the payload's viewport navigates;
//! the main document's own HTTP status and Chrome's net error decide failures; then the wait
//! (load, network idle, or a selector polled after load) and the capture.

use jobs_shared::runtime::clock::now_ms;
use std::time::Duration;

use base64::Engine;
use jobs_shared::handlers::screenshot::{
    self, classify_navigation_error, Capture, DocumentResponse, PageWatch, SETTLE_MS, WATCHED_EVENTS,
};
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use serde_json::{json, Value};
use worker::{Delay, Env};

use super::cdp_session::{BrowserSession, Cdp};
use super::stop::Stop;

/// Any command but the navigation and the wait gets this long.
const COMMAND_TIMEOUT_MS: i64 = 30_000;
/// Disposing of the tab's context is tidying up: it may not hold the job long.
const CLOSE_TIMEOUT_MS: i64 = 5_000;
const SELECTOR_POLL_MS: i64 = 100;

/// The captured image and the page it shows.
pub struct Shot {
    pub bytes: Vec<u8>,
    pub status: u16,
    pub final_url: String,
}

/// `Stop::Busy` when the binding has no browser free (its 429 on acquiring or connecting).
pub(super) async fn capture(capture: &Capture, env: &Env) -> Result<Shot, Stop> {
    let browser = env.service("BROWSER").map_err(|_| {
        JobError::new(
            ErrorClass::NotConfigured,
            "no BROWSER binding (browser = { binding = \"BROWSER\" } in wrangler.toml)",
        )
    })?;
    let session = BrowserSession::open(browser, capture.keep_alive_ms())
        .await
        .map_err(Stop::of_service)?;
    let shot = match session.cdp(&WATCHED_EVENTS) {
        Ok(mut cdp) => in_tab(&mut cdp, capture).await,
        Err(e) => Err(e),
    };
    session.close().await;
    Ok(shot?)
}

/// Opens a tab in a browser context of its own (no cookies or cache shared with another
/// job), shoots, and disposes of the context - closing the tab - whatever happened. The
/// stand-in's Chromium is shared; in production the session's browser goes with it anyway.
/// Should the dispose itself time out (a browser still busy with a huge capture), the context
/// goes when the session's socket closes (`disposeOnDetach`).
async fn in_tab(cdp: &mut Cdp<'_>, capture: &Capture) -> Result<Shot, JobError> {
    let context = cdp
        .call(
            None,
            "Target.createBrowserContext",
            json!({ "disposeOnDetach": true }),
            command_deadline(),
        )
        .await?;
    let context_id = field(&context, "browserContextId")?;
    let created = cdp
        .call(
            None,
            "Target.createTarget",
            json!({ "url": "about:blank", "browserContextId": context_id }),
            command_deadline(),
        )
        .await;
    let shot = match created.and_then(|target| field(&target, "targetId")) {
        Ok(target_id) => shoot(cdp, &target_id, capture).await,
        Err(e) => Err(e),
    };
    let dispose = json!({ "browserContextId": context_id });
    let _ = cdp
        .call(
            None,
            "Target.disposeBrowserContext",
            dispose,
            now_ms() + CLOSE_TIMEOUT_MS,
        )
        .await;
    shot
}

async fn shoot(cdp: &mut Cdp<'_>, target_id: &str, capture: &Capture) -> Result<Shot, JobError> {
    let attach = json!({ "targetId": target_id, "flatten": true });
    let attached = cdp
        .call(None, "Target.attachToTarget", attach, command_deadline())
        .await?;
    let tab = field(&attached, "sessionId")?;
    let tab = Some(tab.as_str());
    let setup = [
        ("Page.enable", json!({})),
        ("Page.setLifecycleEventsEnabled", json!({ "enabled": true })),
        ("Network.enable", json!({})),
        (
            "Emulation.setDeviceMetricsOverride",
            capture.device_metrics(),
        ),
    ];
    for (method, params) in setup {
        cdp.call(tab, method, params, command_deadline()).await?;
    }

    let deadline = now_ms() + i64::from(capture.timeout_ms);
    let mut watch = PageWatch::new(target_id);
    let document = navigate(cdp, tab, capture, &mut watch, deadline)
        .await
        .map_err(|e| navigation_timeout(e, capture))?;
    if let Some(probe) = capture.selector_probe() {
        wait_for_selector(cdp, tab, &probe, deadline)
            .await
            .map_err(|e| navigation_timeout(e, capture))?;
    }

    let content = match capture.full_page {
        true => content_size(cdp, tab).await?,
        false => None,
    };
    let params = capture.capture_params(content);
    let image = cdp
        .call(tab, "Page.captureScreenshot", params, command_deadline())
        .await?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(field(&image, "data")?)
        .map_err(|e| JobError::new(ErrorClass::Internal, format!("screenshot data: {e}")))?;
    Ok(Shot {
        bytes,
        status: document.status,
        final_url: document.url,
    })
}

/// Navigates and waits for the page's ready event; answers the main document's response.
async fn navigate(
    cdp: &mut Cdp<'_>,
    tab: Option<&str>,
    capture: &Capture,
    watch: &mut PageWatch,
    deadline: i64,
) -> Result<DocumentResponse, JobError> {
    let navigation = cdp
        .call(
            tab,
            "Page.navigate",
            json!({ "url": capture.url }),
            deadline,
        )
        .await?;
    watch.start(navigation["loaderId"].as_str().unwrap_or_default());
    if let Some(error_text) = navigation["errorText"].as_str() {
        // A 4xx/5xx with an empty body fails as ERR_HTTP_RESPONSE_CODE_FAILURE: its status,
        // already received, says more.
        while let Some(event) = cdp.buffered_event() {
            watch.observe(&event);
        }
        if let Some(document) = watch.document(watch.current()) {
            document.check(now_ms())?;
        }
        return Err(classify_navigation_error(error_text));
    }
    let event = capture.lifecycle_event();
    // The latest navigation's document, checked; and since when it has been ready, unmoved.
    let mut checked: Option<DocumentResponse> = None;
    let mut ready_at = None;
    loop {
        let loader = watch.current();
        if checked.as_ref().is_none_or(|d| d.loader_id != loader) {
            checked = watch.document(loader).cloned();
            ready_at = None;
            if let Some(document) = &checked {
                document.check(now_ms())?;
            }
        }
        if checked.is_some() && watch.reached(loader, event) && !watch.pending() {
            ready_at.get_or_insert_with(now_ms);
        } else {
            ready_at = None;
        }
        if watch.crashed() {
            return Err(JobError::new(ErrorClass::Internal, "the page crashed"));
        }
        if let Some(error_text) = watch.failed() {
            return Err(classify_navigation_error(error_text));
        }
        // Once ready, the page has SETTLE_MS to start a navigation of its own.
        let until = ready_at.map_or(deadline, |at| deadline.min(at + SETTLE_MS));
        match cdp.next_event(until).await? {
            Some(message) => watch.observe(&message),
            None => match (ready_at, checked) {
                (Some(_), Some(document)) => return Ok(document),
                _ => return Err(timed_out(not_ready(event, watch.redirects()))),
            },
        }
    }
}

/// Why the wait ended without a page: `event` never came, though the page may have moved on.
fn not_ready(event: &str, redirects: u32) -> String {
    match redirects {
        0 => format!("the page did not reach {event}"),
        n => format!("the page did not reach {event} (it navigated {n} time(s) by itself)"),
    }
}

/// Polls the selector until it matches or the deadline passes. A selector the page's
/// `querySelector` rejects fails the same way on every attempt: `invalid_payload`.
async fn wait_for_selector(
    cdp: &mut Cdp<'_>,
    tab: Option<&str>,
    probe: &str,
    deadline: i64,
) -> Result<(), JobError> {
    let params = json!({ "expression": probe, "returnByValue": true });
    loop {
        let answer = cdp
            .call(tab, "Runtime.evaluate", params.clone(), deadline)
            .await?;
        if let Some(exception) = answer.get("exceptionDetails") {
            let text = exception["exception"]["description"]
                .as_str()
                .unwrap_or("exception");
            return Err(JobError::new(
                ErrorClass::InvalidPayload,
                format!("selector: {text}"),
            ));
        }
        if answer["result"]["value"] == Value::Bool(true) {
            return Ok(());
        }
        if now_ms() + SELECTOR_POLL_MS >= deadline {
            return Err(timed_out("the selector matched nothing".to_string()));
        }
        Delay::from(Duration::from_millis(SELECTOR_POLL_MS.unsigned_abs())).await;
    }
}

/// The page's CSS content size, for a full-page clip.
async fn content_size(
    cdp: &mut Cdp<'_>,
    tab: Option<&str>,
) -> Result<Option<(f64, f64)>, JobError> {
    let metrics = cdp
        .call(tab, "Page.getLayoutMetrics", json!({}), command_deadline())
        .await?;
    let size = match metrics.get("cssContentSize") {
        Some(size) => size,
        None => &metrics["contentSize"],
    };
    Ok(size["width"].as_f64().zip(size["height"].as_f64()))
}

fn command_deadline() -> i64 {
    now_ms() + COMMAND_TIMEOUT_MS
}

fn timed_out(message: String) -> JobError {
    JobError::new(ErrorClass::Timeout, message)
}

/// Running out of the page budget, in the navigation or the wait, is a navigation timeout.
fn navigation_timeout(error: JobError, capture: &Capture) -> JobError {
    if error.class != ErrorClass::Timeout {
        return error;
    }
    JobError::new(
        screenshot::NAVIGATION_TIMEOUT,
        format!(
            "{} within {} ms ({})",
            error.message, capture.timeout_ms, capture.url
        ),
    )
}

fn field(result: &Value, name: &str) -> Result<String, JobError> {
    result[name].as_str().map(str::to_string).ok_or_else(|| {
        JobError::new(
            ErrorClass::Internal,
            format!("the browser's answer has no {name}"),
        )
    })
}
