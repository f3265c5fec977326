//! A Chrome DevTools Protocol client over the Browser Rendering binding's session protocol
//! (workers-rs has no wrapper): `POST /v1/devtools/browser?keep_alive=<ms>` acquires a browser
//! and answers `{sessionId}`; `GET /v1/devtools/browser/<id>` with `Upgrade: websocket`
//! connects to it, and CDP's JSON messages flow over that socket; `DELETE
//! /v1/devtools/browser/<id>` releases the browser. The local stand-in
//! (dev/browser-standin) speaks the same protocol, so this code runs unchanged in tests.

use jobs_shared::runtime::clock::now_ms;
use std::collections::VecDeque;

use futures::StreamExt;
use jobs_shared::retry::error_class::{ErrorClass, JobError};

use crate::outbound::fetch_timeout;
use serde::Deserialize;
use serde_json::{json, Value};
use worker::{
    EventStream, Fetcher, Headers, Method, Request, RequestInit, Response, WebSocket,
    WebsocketEvent,
};

/// The binding routes on the path alone; the host is a placeholder.
const BASE: &str = "https://browser.binding/v1/devtools/browser";

#[derive(Deserialize)]
struct Acquired {
    #[serde(rename = "sessionId")]
    session_id: String,
}

/// One acquired browser and its connected socket. Call [`BrowserSession::close`] when done:
/// a session left open holds one of the account's browsers until `keep_alive` runs out.
pub struct BrowserSession {
    browser: Fetcher,
    id: String,
    ws: WebSocket,
}

impl BrowserSession {
    pub async fn open(browser: Fetcher, keep_alive_ms: u32) -> Result<BrowserSession, JobError> {
        let url = format!("{BASE}?keep_alive={keep_alive_ms}");
        let mut acquired = send(&browser, &url, Method::Post, Headers::new()).await?;
        check_status(&acquired, "acquiring a browser")?;
        let id = acquired
            .json::<Acquired>()
            .await
            .map_err(|e| browser_fault(format!("acquiring a browser: no session id ({e})")))?
            .session_id;
        let upgrade = Headers::new();
        upgrade.set("upgrade", "websocket").map_err(worker_fault)?;
        let connected = send(&browser, &format!("{BASE}/{id}"), Method::Get, upgrade).await;
        let ws = match connected.and_then(|r| accept(r, &id)) {
            Ok(ws) => ws,
            Err(e) => {
                release(&browser, &id).await;
                return Err(e);
            }
        };
        Ok(BrowserSession { browser, id, ws })
    }

    /// A CDP client on the session's socket that keeps the events named in `watched`.
    pub fn cdp(&self, watched: &'static [&'static str]) -> Result<Cdp<'_>, JobError> {
        Ok(Cdp {
            ws: &self.ws,
            watched,
            events: self.ws.events().map_err(worker_fault)?,
            next_id: 0,
            backlog: VecDeque::new(),
        })
    }

    /// Closes the socket and releases the browser; failures only cost the keep-alive wait.
    pub async fn close(self) {
        let _ = self.ws.close(Some(1000), Some("done"));
        release(&self.browser, &self.id).await;
    }
}

async fn release(browser: &Fetcher, id: &str) {
    let _ = send(
        browser,
        &format!("{BASE}/{id}"),
        Method::Delete,
        Headers::new(),
    )
    .await;
}

fn accept(response: Response, id: &str) -> Result<WebSocket, JobError> {
    check_status(&response, "connecting to the browser")?;
    let ws = response
        .websocket()
        .ok_or_else(|| browser_fault(format!("session {id}: no WebSocket in the answer")))?;
    ws.accept().map_err(worker_fault)?;
    Ok(ws)
}

async fn send(
    browser: &Fetcher,
    url: &str,
    method: Method,
    headers: Headers,
) -> Result<Response, JobError> {
    let mut init = RequestInit::new();
    init.with_method(method).with_headers(headers);
    let request = Request::new_with_init(url, &init).map_err(worker_fault)?;
    browser.fetch_request(request).await.map_err(|e| {
        JobError::new(
            ErrorClass::Network,
            format!("browser binding unreachable: {e}"),
        )
    })
}

/// The binding's own answer: a 429 is the account's browser limit (the job waits for a slot,
/// see `Stop::of_service`), 5xx a fault of the service (retried), another 4xx our request's
/// (final).
fn check_status(response: &Response, what: &str) -> Result<(), JobError> {
    let status = response.status_code();
    if status == 101 {
        return Ok(());
    }
    fetch_timeout::check_status(response)
        .map_err(|e| e.reworded(|m| format!("browser binding, {what}: {m}")))
}

/// The browser failed or answered nonsense: retried, the next session may be healthy.
fn browser_fault(message: String) -> JobError {
    JobError::new(ErrorClass::Internal, message)
}

fn worker_fault(e: worker::Error) -> JobError {
    JobError::new(ErrorClass::Internal, format!("browser session: {e}"))
}

/// Commands and events over one session socket. Replies are matched by id; watched events
/// that arrive meanwhile wait in a backlog for [`Cdp::next_event`]; all others are dropped,
/// so a busy page's network chatter costs no memory.
pub struct Cdp<'s> {
    ws: &'s WebSocket,
    watched: &'static [&'static str],
    events: EventStream<'s>,
    next_id: u64,
    backlog: VecDeque<Value>,
}

impl Cdp<'_> {
    /// Sends `method` (to the flattened target `session`, if given) and waits for its
    /// result until `deadline_ms`; running out is a `timeout` error naming the method.
    pub async fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        deadline_ms: i64,
    ) -> Result<Value, JobError> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = session.into();
        }
        self.ws
            .send_with_str(message.to_string())
            .map_err(worker_fault)?;
        loop {
            let Some(mut reply) = self.read(deadline_ms).await? else {
                return Err(JobError::new(
                    ErrorClass::Timeout,
                    format!("the browser did not answer {method} in time"),
                ));
            };
            if reply["id"].as_u64() != Some(id) {
                self.keep(reply);
                continue;
            }
            if let Some(error) = reply.get("error") {
                let text = error["message"].as_str().unwrap_or("unknown error");
                return Err(browser_fault(format!("{method} failed: {text}")));
            }
            return Ok(reply["result"].take());
        }
    }

    /// The next watched event, or `None` once `deadline_ms` passes.
    pub async fn next_event(&mut self, deadline_ms: i64) -> Result<Option<Value>, JobError> {
        if let Some(event) = self.buffered_event() {
            return Ok(Some(event));
        }
        loop {
            match self.read(deadline_ms).await? {
                None => return Ok(None),
                Some(m) if self.is_watched(&m) => return Ok(Some(m)),
                Some(_) => {}
            }
        }
    }

    /// A watched event already received, without waiting for more.
    pub fn buffered_event(&mut self) -> Option<Value> {
        self.backlog.pop_front()
    }

    fn keep(&mut self, message: Value) {
        if self.is_watched(&message) {
            self.backlog.push_back(message);
        }
    }

    fn is_watched(&self, message: &Value) -> bool {
        message["method"]
            .as_str()
            .is_some_and(|m| self.watched.contains(&m))
    }

    /// One message from the socket, or `None` at the deadline.
    async fn read(&mut self, deadline_ms: i64) -> Result<Option<Value>, JobError> {
        let left = deadline_ms - now_ms();
        if left <= 0 {
            return Ok(None);
        }
        let Some(event) = crate::deadline::within(left.unsigned_abs(), self.events.next()).await
        else {
            return Ok(None);
        };
        match event {
            Some(Ok(WebsocketEvent::Message(message))) => {
                let text = message.text().unwrap_or_default();
                serde_json::from_str(&text)
                    .map(Some)
                    .map_err(|e| browser_fault(format!("the browser sent bad JSON: {e}")))
            }
            Some(Ok(WebsocketEvent::Close(close))) => Err(JobError::new(
                ErrorClass::Network,
                format!(
                    "the browser session closed ({} {})",
                    close.code(),
                    close.reason()
                ),
            )),
            Some(Err(e)) => Err(JobError::new(
                ErrorClass::Network,
                format!("the browser session failed: {e}"),
            )),
            None => Err(JobError::new(
                ErrorClass::Network,
                "the browser session ended",
            )),
        }
    }
}
