//! `screenshot_capture`'s decisions, kept pure: what a payload resolves to, the CDP and REST
//! requests it becomes, what the browser's events say about the page, where the image is
//! stored, and how a failed navigation is classified. The consumer only moves bytes.

use serde::Serialize;
use serde_json::{json, Value};

use crate::job::family::Family;
use crate::job::payloads::{
    ImageFormat, ScreenshotCapturePayload, Viewport, WaitUntil, MAX_VIEWPORT_SIDE,
};
use crate::retry::error_class::{classify_http_status, ErrorClass, HandlerClass, JobError};
use crate::util::text_prefix::byte_prefix;

/// The viewport when the payload names none.
pub const DEFAULT_VIEWPORT: Viewport = Viewport {
    width: 1280,
    height: 800,
};

/// A full-page capture stops here: taller pages are cut, since the browser's texture limit
/// is about this size and a longer image would be mostly blank or fail. It is at most
/// `MAX_VIEWPORT_SIDE` wide: a wider page is cut at the right.
pub const MAX_FULL_PAGE_HEIGHT: u32 = 16_384;

/// JPEG quality for `format: "jpeg"`.
pub const JPEG_QUALITY: u8 = 80;

/// The Browser Rendering session's idle limit is 10 minutes.
const MAX_KEEP_ALIVE_MS: u32 = 600_000;

/// The screenshot family's browser slots in use (at most 3 browsers at once: the queue
/// consumer's max_concurrency with batch size 1, docs/app-guide.md "Screenshots"): what an operator
/// watches.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BrowserSlots {
    /// Screenshot jobs running now (a job whose worker died counts until the sweep rescues it).
    pub running: i64,
    pub limit: u32,
    /// `running / limit`: 1.0 is every slot busy.
    pub utilization: f64,
}

impl BrowserSlots {
    pub fn new(running: i64) -> BrowserSlots {
        let limit = Family::Screenshot.concurrency();
        BrowserSlots {
            running,
            limit,
            utilization: running as f64 / f64::from(limit),
        }
    }
}

/// How the screenshot is taken (`SCREENSHOT_MODE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureMode {
    /// CDP over the Browser Rendering binding `BROWSER` (the default).
    Binding,
    /// The account's REST endpoint `/browser-rendering/screenshot`, with an API token.
    Rest,
}

impl CaptureMode {
    /// From the config value; unset is `binding`.
    pub fn parse(value: Option<&str>) -> Result<CaptureMode, JobError> {
        match value.map(str::trim) {
            None | Some("binding") => Ok(CaptureMode::Binding),
            Some("rest") => Ok(CaptureMode::Rest),
            Some(other) => Err(JobError::new(
                ErrorClass::NotConfigured,
                format!("SCREENSHOT_MODE must be \"binding\" or \"rest\", not {other:?}"),
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CaptureMode::Binding => "binding",
            CaptureMode::Rest => "rest",
        }
    }
}

/// When the page counts as ready to capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageReady {
    Load,
    /// No network activity for 500 ms (Chrome's `networkIdle`, puppeteer's `networkidle0`).
    NetworkIdle,
    /// The page loaded and this CSS selector matches an element.
    Selector(String),
}

/// A payload with every default applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Capture {
    pub url: String,
    pub viewport: Viewport,
    pub full_page: bool,
    pub ready: PageReady,
    pub format: ImageFormat,
    /// Budget for navigating and reaching `ready`.
    pub timeout_ms: u32,
}

impl Capture {
    /// A `selector` without `wait_until` means waiting for it.
    pub fn new(payload: ScreenshotCapturePayload, default_timeout_ms: u32) -> Capture {
        let ready = match (payload.wait_until, payload.selector) {
            (Some(WaitUntil::Networkidle), _) => PageReady::NetworkIdle,
            (Some(WaitUntil::Selector) | None, Some(selector)) => PageReady::Selector(selector),
            _ => PageReady::Load,
        };
        Capture {
            url: payload.url,
            viewport: payload.viewport.unwrap_or(DEFAULT_VIEWPORT),
            full_page: payload.full_page.unwrap_or(false),
            ready,
            format: payload.format.unwrap_or(ImageFormat::Png),
            timeout_ms: payload.timeout_ms.unwrap_or(default_timeout_ms),
        }
    }

    /// How long the browser session may idle: the page budget plus a minute for setup and
    /// capture, so an abandoned session (a crashed worker) frees its slot soon after.
    pub fn keep_alive_ms(&self) -> u32 {
        self.timeout_ms
            .saturating_add(60_000)
            .min(MAX_KEEP_ALIVE_MS)
    }

    /// The Chrome lifecycle event that ends the wait (a selector is polled after `load`).
    pub fn lifecycle_event(&self) -> &'static str {
        match self.ready {
            PageReady::NetworkIdle => "networkIdle",
            PageReady::Load | PageReady::Selector(_) => "load",
        }
    }

    /// `Emulation.setDeviceMetricsOverride`: the viewport at 1 device pixel per CSS pixel, so
    /// the image's pixels are the viewport's.
    pub fn device_metrics(&self) -> Value {
        json!({
            "width": self.viewport.width,
            "height": self.viewport.height,
            "deviceScaleFactor": 1,
            "mobile": false,
        })
    }

    /// A JavaScript expression that is true once the selector matches; `None` unless waiting
    /// for one. The selector travels as a JSON string literal, so it cannot break out.
    pub fn selector_probe(&self) -> Option<String> {
        match &self.ready {
            PageReady::Selector(selector) => Some(format!(
                "document.querySelector({}) !== null",
                Value::from(selector.as_str())
            )),
            _ => None,
        }
    }

    /// `Page.captureScreenshot`. For a full page, `content` is the page's CSS content size
    /// (`Page.getLayoutMetrics`): the clip covers it, beyond the viewport.
    pub fn capture_params(&self, content: Option<(f64, f64)>) -> Value {
        let mut params = json!({ "format": format_name(self.format) });
        if self.format == ImageFormat::Jpeg {
            params["quality"] = JPEG_QUALITY.into();
        }
        if let (true, Some((width, height))) = (self.full_page, content) {
            let width = width
                .ceil()
                .clamp(f64::from(self.viewport.width), f64::from(MAX_VIEWPORT_SIDE));
            let height = height.ceil().clamp(
                f64::from(self.viewport.height),
                f64::from(MAX_FULL_PAGE_HEIGHT),
            );
            params["captureBeyondViewport"] = true.into();
            params["clip"] = json!({"x": 0, "y": 0, "width": width, "height": height, "scale": 1});
        }
        params
    }

    /// The REST endpoint's request body (puppeteer's option names).
    pub fn rest_body(&self) -> Value {
        let mut screenshot = json!({
            "type": format_name(self.format),
            "fullPage": self.full_page,
        });
        if self.format == ImageFormat::Jpeg {
            screenshot["quality"] = JPEG_QUALITY.into();
        }
        let wait_until = match self.ready {
            PageReady::NetworkIdle => "networkidle0",
            PageReady::Load | PageReady::Selector(_) => "load",
        };
        let mut body = json!({
            "url": self.url,
            "viewport": {"width": self.viewport.width, "height": self.viewport.height},
            "screenshotOptions": screenshot,
            "gotoOptions": {"waitUntil": wait_until, "timeout": self.timeout_ms},
        });
        if let PageReady::Selector(selector) = &self.ready {
            body["waitForSelector"] = json!({"selector": selector, "timeout": self.timeout_ms});
        }
        body
    }
}

fn format_name(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => "png",
        ImageFormat::Jpeg => "jpeg",
    }
}

pub fn content_type(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => "image/png",
        ImageFormat::Jpeg => "image/jpeg",
    }
}

/// One object per attempt (the job's run number): a retry never overwrites an earlier
/// attempt's image (docs/app-guide.md "Run records and artifacts").
pub fn screenshot_key(job_id: &str, run: u32, format: ImageFormat) -> String {
    let extension = match format {
        ImageFormat::Png => "png",
        ImageFormat::Jpeg => "jpg",
    };
    format!("screenshots/{job_id}/{run}.{extension}")
}

/// The image's R2 custom metadata: its job, and the page's URL cut to
/// [`MAX_METADATA_URL_BYTES`] (R2 refuses an object whose metadata is over 2 KiB; the job
/// keeps the whole URL).
pub fn screenshot_metadata(job_id: &str, url: &str) -> [(String, String); 2] {
    [
        ("job_id".to_string(), job_id.to_string()),
        (
            "url".to_string(),
            byte_prefix(url, MAX_METADATA_URL_BYTES).to_string(),
        ),
    ]
}

/// The longest URL an image's R2 metadata keeps.
pub const MAX_METADATA_URL_BYTES: usize = 1024;

/// A page did not load (or reach its wait condition) in time: usually a slow or overloaded
/// site, so retried.
pub const NAVIGATION_TIMEOUT: ErrorClass = ErrorClass::Handler(&HandlerClass {
    name: "navigation_timeout",
    retryable: true,
});

/// The target's host name does not resolve. Not retried: a name that fails to resolve is nearly
/// always a typo or a lapsed domain, and each retry would hold a browser slot.
pub const DNS: ErrorClass = ErrorClass::Handler(&HandlerClass {
    name: "dns",
    retryable: false,
});

/// `Page.navigate`'s `errorText` (Chrome's net error name) as a job error. Only
/// `ERR_NAME_NOT_RESOLVED` (the name does not exist) is `dns`; a resolver that failed to
/// answer (`ERR_NAME_RESOLUTION_FAILED`) is a transient network fault like a refused or
/// reset connection.
pub fn classify_navigation_error(error_text: &str) -> JobError {
    let class = match error_text {
        "net::ERR_NAME_NOT_RESOLVED" => DNS,
        "net::ERR_TIMED_OUT" | "net::ERR_CONNECTION_TIMED_OUT" => NAVIGATION_TIMEOUT,
        // Chrome refuses these before sending anything, or the target's redirects lead
        // nowhere it will go (a loop, a file: URL): the URL itself is the problem.
        "net::ERR_UNSAFE_PORT"
        | "net::ERR_INVALID_URL"
        | "net::ERR_DISALLOWED_URL_SCHEME"
        | "net::ERR_UNSAFE_REDIRECT"
        | "net::ERR_TOO_MANY_REDIRECTS"
        | "net::ERR_INVALID_REDIRECT" => ErrorClass::ClientError,
        _ => ErrorClass::Network,
    };
    JobError::new(class, format!("navigation failed: {error_text}"))
}

/// The main document's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct DocumentResponse {
    pub loader_id: String,
    pub status: u16,
    pub url: String,
    pub retry_after: Option<String>,
}

impl DocumentResponse {
    /// 2xx (and 304) is a page worth capturing; a 4xx of the target is final, 429 and 5xx
    /// retry (with the target's Retry-After).
    pub fn check(&self, now_ms: i64) -> Result<(), JobError> {
        if self.status == 304 {
            return Ok(());
        }
        // The URL is where the target's redirects led: `reworded` bounds it.
        classify_http_status(self.status, self.retry_after.as_deref(), now_ms)
            .map_err(|e| e.reworded(|m| format!("target {} answered {m}", self.url)))
    }
}

/// What the page's CDP events have said so far, for one tab (`frame_id`, the target's id).
/// Only the few events that decide the outcome are kept. The page is followed through the
/// navigations it starts itself (a script setting `location`, a meta refresh): the one that
/// counts is the main frame's latest to commit ([`PageWatch::current`]); one that never
/// commits (a 204, a download) leaves the page where it was.
#[derive(Clone, Debug, Default)]
pub struct PageWatch {
    frame_id: String,
    /// The loaderId of the main frame's latest committed navigation, once ours has started.
    current: Option<String>,
    /// A navigation the page started itself that has not committed yet.
    pending: Option<String>,
    /// Chrome's net error for a pending navigation that failed before it committed.
    failed: Option<String>,
    /// Navigations the page started after ours that committed.
    redirects: u32,
    documents: Vec<DocumentResponse>,
    /// (loaderId, lifecycle event name) of the main frame, and [`STOPPED`] when its frame
    /// stopped loading, `load` or not.
    lifecycle: Vec<(String, String)>,
    crashed: bool,
}

/// Events the watch reads; a CDP client may drop the rest.
pub const WATCHED_EVENTS: [&str; 7] = [
    "Network.responseReceived",
    "Network.loadingFailed",
    "Page.lifecycleEvent",
    "Page.frameStartedNavigating",
    "Page.frameStoppedLoading",
    "Inspector.targetCrashed",
    "Target.detachedFromTarget",
];

/// The watch's name for a committed navigation whose frame stopped loading (Chrome has no
/// lifecycle event for it).
const STOPPED: &str = "stopped";

/// How long a page that reached its ready event is watched for a navigation of its own before
/// it is captured: a meta refresh starts one just after `load` (about 10 ms in Chromium).
pub const SETTLE_MS: i64 = 200;

impl PageWatch {
    pub fn new(frame_id: &str) -> PageWatch {
        PageWatch {
            frame_id: frame_id.to_string(),
            ..PageWatch::default()
        }
    }

    /// Our navigation began as `loader_id` (Page.navigate's answer).
    pub fn start(&mut self, loader_id: &str) {
        self.current = Some(loader_id.to_string());
    }

    /// The main frame's latest committed navigation: ours, or the last one the page started
    /// itself.
    pub fn current(&self) -> &str {
        self.current.as_deref().unwrap_or_default()
    }

    /// Whether the page has started a navigation that has neither committed nor failed.
    pub fn pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Chrome's net error for a navigation the page started that failed before committing.
    pub fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// How many navigations the page started itself after ours, and committed.
    pub fn redirects(&self) -> u32 {
        self.redirects
    }

    /// A main-frame navigation other than the current one (`None` before ours started).
    fn is_new(&self, loader_id: &str) -> bool {
        self.current
            .as_deref()
            .is_some_and(|current| current != loader_id && !loader_id.is_empty())
    }

    /// Takes one CDP event (`{"method", "params"}`).
    pub fn observe(&mut self, event: &Value) {
        let params = &event["params"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let main_frame = params["frameId"].as_str() == Some(self.frame_id.as_str());
        match event["method"].as_str().unwrap_or_default() {
            // Chromium names a navigation's loader as it starts; it becomes current at its
            // commit (the `init` lifecycle event, below), which is all an older one reports.
            "Page.frameStartedNavigating"
                if main_frame
                    && !matches!(
                        params["navigationType"].as_str(),
                        Some("sameDocument" | "historySameDocument")
                    ) =>
            {
                let loader = text(&params["loaderId"]);
                if self.is_new(&loader) {
                    self.pending = Some(loader);
                }
            }
            // A document request's id is its loader's. Aborted (a 204, a download, a
            // navigation cancelled): the page stays as it was.
            "Network.loadingFailed"
                if params["requestId"].as_str().is_some()
                    && self.pending.as_deref() == params["requestId"].as_str() =>
            {
                match params["errorText"].as_str() {
                    Some("net::ERR_ABORTED") | None => {}
                    Some(error) => self.failed = Some(error.to_string()),
                }
                self.pending = None;
            }
            "Network.responseReceived" if main_frame && params["type"] == "Document" => {
                let response = &params["response"];
                let retry_after = response["headers"].as_object().and_then(|headers| {
                    headers
                        .iter()
                        .find(|(name, _)| name.eq_ignore_ascii_case("retry-after"))
                        .and_then(|(_, v)| v.as_str().map(str::to_string))
                });
                self.documents.push(DocumentResponse {
                    loader_id: text(&params["loaderId"]),
                    status: response["status"]
                        .as_f64()
                        .map_or(0, |s| s.clamp(0.0, 999.0) as u16),
                    url: text(&response["url"]),
                    retry_after,
                });
            }
            "Page.lifecycleEvent" if main_frame => {
                let loader = text(&params["loaderId"]);
                if params["name"] == "init" && self.is_new(&loader) {
                    if self.pending.as_deref() == Some(loader.as_str()) {
                        self.pending = None;
                    }
                    self.current = Some(loader.clone());
                    self.redirects += 1;
                }
                self.lifecycle.push((loader, text(&params["name"])));
            }
            // Without a loader id: the current navigation's, unless another is on its way.
            "Page.frameStoppedLoading" if main_frame && self.pending.is_none() => {
                if let Some(current) = &self.current {
                    self.lifecycle.push((current.clone(), STOPPED.to_string()));
                }
            }
            "Inspector.targetCrashed" | "Target.detachedFromTarget" => self.crashed = true,
            _ => {}
        }
    }

    /// The main document's latest response for the navigation `loader_id`.
    pub fn document(&self, loader_id: &str) -> Option<&DocumentResponse> {
        self.documents
            .iter()
            .rev()
            .find(|d| d.loader_id == loader_id)
    }

    /// Whether the navigation `loader_id` has fired lifecycle event `name`. A page that stopped
    /// loading without `load` (a navigation it started, which came to nothing, cut its load
    /// short; or it called `window.stop()`) is as loaded as it will be.
    pub fn reached(&self, loader_id: &str, name: &str) -> bool {
        (self.lifecycle.iter()).any(|(loader, event)| {
            loader == loader_id && (event == name || (name == "load" && event == STOPPED))
        })
    }

    /// The tab crashed or was detached: nothing more will come.
    pub fn crashed(&self) -> bool {
        self.crashed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(extra: Value) -> ScreenshotCapturePayload {
        let mut p = json!({"url": "https://example.com/"});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(p).unwrap()
    }

    #[test]
    fn defaults_and_wait_conditions() {
        let c = Capture::new(payload(json!({})), 60_000);
        assert_eq!(c.viewport, DEFAULT_VIEWPORT);
        assert_eq!(
            (c.full_page, &c.ready, c.format, c.timeout_ms),
            (false, &PageReady::Load, ImageFormat::Png, 60_000)
        );
        assert_eq!(c.keep_alive_ms(), 120_000);
        assert_eq!(c.lifecycle_event(), "load");
        assert_eq!(c.selector_probe(), None);

        let idle = Capture::new(payload(json!({"wait_until": "networkidle"})), 1);
        assert_eq!(idle.lifecycle_event(), "networkIdle");
        let sel = Capture::new(payload(json!({"selector": "#a\"b"})), 1);
        assert_eq!(sel.ready, PageReady::Selector("#a\"b".into()));
        assert_eq!(sel.lifecycle_event(), "load");
        assert_eq!(
            sel.selector_probe().unwrap(),
            r##"document.querySelector("#a\"b") !== null"##
        );
        // wait_until "load" with a selector: the selector is not waited for.
        let load = Capture::new(payload(json!({"wait_until": "load", "selector": "x"})), 1);
        assert_eq!(load.ready, PageReady::Load);
        let long = Capture::new(payload(json!({"timeout_ms": 120_000})), 1);
        assert_eq!(long.keep_alive_ms(), 180_000);
    }

    #[test]
    fn capture_params_viewport_and_full_page() {
        let c = Capture::new(
            payload(json!({"viewport": {"width": 400, "height": 300}})),
            1,
        );
        assert_eq!(
            c.device_metrics(),
            json!({"width": 400, "height": 300, "deviceScaleFactor": 1, "mobile": false})
        );
        assert_eq!(
            c.capture_params(Some((400.0, 2000.0))),
            json!({"format": "png"})
        );
        let full = Capture::new(
            payload(
                json!({"viewport": {"width": 400, "height": 300}, "full_page": true, "format": "jpeg"}),
            ),
            1,
        );
        assert_eq!(
            full.capture_params(Some((399.5, 1999.2))),
            json!({"format": "jpeg", "quality": 80, "captureBeyondViewport": true,
                   "clip": {"x": 0, "y": 0, "width": 400.0, "height": 2000.0, "scale": 1}})
        );
        // A page shorter than the viewport is captured at the viewport; a huge one is cut.
        let short = full.capture_params(Some((10.0, 10.0)));
        assert_eq!(
            (
                short["clip"]["width"].clone(),
                short["clip"]["height"].clone()
            ),
            (json!(400.0), json!(300.0))
        );
        let huge = full.capture_params(Some((1e9, 1e9)));
        assert_eq!(
            (
                huge["clip"]["width"].clone(),
                huge["clip"]["height"].clone()
            ),
            (json!(4096.0), json!(16384.0))
        );
    }

    #[test]
    fn rest_body() {
        let c = Capture::new(
            payload(
                json!({"viewport": {"width": 640, "height": 480}, "full_page": true,
                           "selector": ".ready", "format": "jpeg", "timeout_ms": 5000}),
            ),
            60_000,
        );
        assert_eq!(
            c.rest_body(),
            json!({
                "url": "https://example.com/",
                "viewport": {"width": 640, "height": 480},
                "screenshotOptions": {"type": "jpeg", "fullPage": true, "quality": 80},
                "gotoOptions": {"waitUntil": "load", "timeout": 5000},
                "waitForSelector": {"selector": ".ready", "timeout": 5000},
            })
        );
        let idle = Capture::new(payload(json!({"wait_until": "networkidle"})), 7);
        assert_eq!(
            idle.rest_body()["gotoOptions"],
            json!({"waitUntil": "networkidle0", "timeout": 7})
        );
        assert_eq!(idle.rest_body().get("waitForSelector"), None);
    }

    #[test]
    fn browser_slots() {
        let slots = BrowserSlots::new(2);
        assert_eq!((slots.running, slots.limit), (2, 3));
        assert!((slots.utilization - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(
            serde_json::to_value(BrowserSlots::new(3)).unwrap(),
            json!({"running": 3, "limit": 3, "utilization": 1.0})
        );
    }

    #[test]
    fn modes_keys_and_types() {
        assert_eq!(CaptureMode::parse(None), Ok(CaptureMode::Binding));
        assert_eq!(CaptureMode::parse(Some("rest")), Ok(CaptureMode::Rest));
        assert_eq!(
            CaptureMode::parse(Some("puppeteer")).unwrap_err().class,
            ErrorClass::NotConfigured
        );
        assert_eq!(
            screenshot_key("01K", 1, ImageFormat::Png),
            "screenshots/01K/1.png"
        );
        assert_eq!(
            screenshot_key("01K", 2, ImageFormat::Jpeg),
            "screenshots/01K/2.jpg"
        );
        assert_eq!(content_type(ImageFormat::Jpeg), "image/jpeg");
    }

    #[test]
    fn navigation_errors() {
        let class = |t| classify_navigation_error(t).class;
        assert_eq!(class("net::ERR_NAME_NOT_RESOLVED"), DNS);
        assert!(!DNS.retryable() && NAVIGATION_TIMEOUT.retryable());
        assert_eq!(serde_json::to_value(DNS).unwrap(), "dns");
        assert_eq!(
            class("net::ERR_NAME_RESOLUTION_FAILED"),
            ErrorClass::Network
        );
        assert_eq!(class("net::ERR_CONNECTION_REFUSED"), ErrorClass::Network);
        assert_eq!(class("net::ERR_TIMED_OUT"), NAVIGATION_TIMEOUT);
        assert_eq!(class("net::ERR_UNSAFE_PORT"), ErrorClass::ClientError);
        assert_eq!(
            class("net::ERR_TOO_MANY_REDIRECTS"),
            ErrorClass::ClientError
        );
        assert_eq!(class("net::ERR_UNSAFE_REDIRECT"), ErrorClass::ClientError);
        assert_eq!(
            classify_navigation_error("net::ERR_NAME_NOT_RESOLVED").message,
            "navigation failed: net::ERR_NAME_NOT_RESOLVED"
        );
    }

    fn response(frame: &str, loader: &str, kind: &str, status: u16, headers: Value) -> Value {
        json!({"method": "Network.responseReceived", "params": {
            "frameId": frame, "loaderId": loader, "requestId": loader, "type": kind,
            "response": {"status": status, "url": "http://t/p", "headers": headers}}})
    }

    fn lifecycle(frame: &str, loader: &str, name: &str) -> Value {
        json!({"method": "Page.lifecycleEvent", "params": {"frameId": frame, "loaderId": loader, "name": name}})
    }

    #[test]
    fn page_watch_follows_the_main_frame_and_its_navigation() {
        let mut w = PageWatch::new("F");
        for e in [
            lifecycle("F", "BLANK", "load"),
            response("F", "L", "Image", 500, json!({})),
            response("OTHER", "L", "Document", 500, json!({})),
            response("F", "L", "Document", 429, json!({"Retry-After": "7"})),
            lifecycle("OTHER", "L", "load"),
            lifecycle("F", "L", "DOMContentLoaded"),
            json!({"method": "Network.dataReceived", "params": {"frameId": "F"}}),
        ] {
            w.observe(&e);
        }
        let doc = w.document("L").unwrap();
        assert_eq!((doc.status, doc.retry_after.as_deref()), (429, Some("7")));
        assert_eq!(w.document("BLANK"), None);
        assert!(!w.reached("L", "load"));
        assert!(w.reached("BLANK", "load"));
        w.observe(&lifecycle("F", "L", "load"));
        assert!(w.reached("L", "load"));
        assert!(!w.crashed());
        w.observe(&json!({"method": "Inspector.targetCrashed", "params": {}}));
        assert!(w.crashed());
    }

    #[test]
    fn page_watch_follows_the_navigations_the_page_starts_itself() {
        let started = |loader: &str, kind: &str| {
            json!({"method": "Page.frameStartedNavigating", "params": {
                "frameId": "F", "loaderId": loader, "navigationType": kind}})
        };
        let mut w = PageWatch::new("F");
        // Events before ours started move nothing.
        w.observe(&lifecycle("F", "BLANK", "init"));
        w.start("L1");
        assert_eq!(w.current(), "L1");
        for e in [
            started("L1", "differentDocument"),
            lifecycle("F", "L1", "init"),
            response("F", "L1", "Document", 200, json!({})),
            lifecycle("F", "L1", "load"),
            // A hash change or pushState is the same document.
            started("L1b", "sameDocument"),
            // A meta refresh: a new navigation just after load, current once it commits.
            started("L2", "differentDocument"),
        ] {
            w.observe(&e);
        }
        assert_eq!((w.current(), w.pending(), w.redirects()), ("L1", true, 0));
        w.observe(&lifecycle("F", "L2", "init"));
        assert_eq!((w.current(), w.pending(), w.redirects()), ("L2", false, 1));
        assert!(!w.reached(w.current(), "load"));
        // A Chromium that names the loader only at its commit.
        w.observe(&lifecycle("F", "L3", "init"));
        w.observe(&response("F", "L3", "Document", 404, json!({})));
        w.observe(&lifecycle("F", "L3", "load"));
        assert_eq!((w.current(), w.redirects()), ("L3", 2));
        assert_eq!(w.document(w.current()).unwrap().status, 404);
        assert!(w.reached(w.current(), "load"));

        // A navigation that never commits (a 204, a download) leaves the page as it was; one
        // that fails before it commits says why.
        let failed = |loader: &str, error: &str| json!({"method": "Network.loadingFailed", "params": {"requestId": loader, "errorText": error}});
        w.observe(&started("L4", "differentDocument"));
        w.observe(&failed("other-request", "net::ERR_FAILED"));
        assert!(w.pending());
        w.observe(&failed("L4", "net::ERR_ABORTED"));
        assert_eq!((w.current(), w.pending(), w.failed()), ("L3", false, None));
        // That cut L3's load short: it stopped loading instead.
        let stopped = json!({"method": "Page.frameStoppedLoading", "params": {"frameId": "F"}});
        assert!(!w.reached("L3", "networkIdle"));
        w.observe(&stopped);
        assert!(w.reached("L3", "load") && !w.reached("L3", "networkIdle"));
        w.observe(&started("L5", "differentDocument"));
        w.observe(&failed("L5", "net::ERR_NAME_NOT_RESOLVED"));
        assert_eq!(
            (w.current(), w.failed()),
            ("L3", Some("net::ERR_NAME_NOT_RESOLVED"))
        );
    }

    #[test]
    fn image_metadata_keeps_a_url_within_r2_s_limit() {
        let long = format!("https://a.io/?q={}", "é".repeat(5000));
        let [(_, id), (_, url)] = screenshot_metadata("J", &long);
        assert_eq!(id, "J");
        assert!(url.len() <= MAX_METADATA_URL_BYTES && long.starts_with(&url));
        assert_eq!(
            screenshot_metadata("J", "https://a.io/")[1].1,
            "https://a.io/"
        );
    }

    #[test]
    fn document_status_classification() {
        let doc = |status| DocumentResponse {
            loader_id: "L".into(),
            status,
            url: "http://t/p".into(),
            retry_after: Some("9".into()),
        };
        assert_eq!(doc(200).check(0), Ok(()));
        assert_eq!(doc(304).check(0), Ok(()));
        let not_found = doc(404).check(0).unwrap_err();
        assert_eq!(not_found.class, ErrorClass::ClientError);
        assert_eq!(not_found.message, "target http://t/p answered HTTP 404");
        let limited = doc(429).check(0).unwrap_err();
        assert_eq!(
            (limited.class, limited.retry_after_secs),
            (ErrorClass::RateLimited, Some(9))
        );
        assert_eq!(
            doc(503).check(0).unwrap_err().class,
            ErrorClass::ServerError
        );
    }
}
