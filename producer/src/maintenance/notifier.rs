//! Outgoing notifications: a page (PagerDuty Events API v2) or a chat message (Slack-style
//! incoming webhook), one JSON POST bounded by a timeout. A 2xx is delivered; anything else is
//! an error the caller keeps in its outbox for the next tick. A page with no routing key goes
//! to chat instead, so a high-family problem still reaches someone; with neither configured
//! nothing is sent (GET /healthz shows which channels are set). A webhook URL is its own
//! credential (a Slack webhook's path is the secret), so an error names the channel and the
//! URL's host, never the URL, the routing key, or the runtime's error text (which may quote the
//! URL).

use std::time::Duration;

use futures::future::{select, Either};
use jobs_shared::job::family::Escalation;
use jobs_shared::observe::escalation::EscalationConfig;
use serde_json::Value;
use worker::{Delay, Fetch, Headers, Method, Request, RequestInit};

/// Sends to the channel `escalation` names (Digest never comes here). `page` builds the
/// PagerDuty event from the routing key; `chat` the Slack message. Ok(false): no channel set.
pub async fn deliver(
    config: &EscalationConfig,
    escalation: Escalation,
    page: impl FnOnce(&str) -> Value,
    chat: impl FnOnce() -> Value,
) -> Result<bool, String> {
    match (
        escalation,
        &config.pagerduty_routing_key,
        &config.slack_webhook_url,
    ) {
        (Escalation::Page, Some(key), _) => {
            post_json("pagerduty", &config.pagerduty_url, &page(key)).await
        }
        (_, _, Some(url)) => post_json("slack", url, &chat()).await,
        _ => return Ok(false),
    }
    .map(|()| true)
}

const TIMEOUT_MS: u64 = 10_000;

/// POSTs `body` to the `channel`'s `url`; the error says what went wrong without the URL.
pub async fn post_json(channel: &str, url: &str, body: &Value) -> Result<(), String> {
    let host = web_sys::Url::new(url)
        .ok()
        .map(|u| u.hostname())
        .filter(|h| !h.is_empty());
    let target = format!("{channel} ({})", host.as_deref().unwrap_or("invalid URL"));
    let unbuilt = |_| format!("{target}: the request could not be built");
    let headers = Headers::new();
    headers
        .set("content-type", "application/json")
        .map_err(unbuilt)?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(body.to_string().into()));
    let request = Request::new_with_init(url, &init).map_err(unbuilt)?;
    let fetch = Fetch::Request(request);
    let sending = Box::pin(fetch.send());
    let timer = Box::pin(Delay::from(Duration::from_millis(TIMEOUT_MS)));
    let finished = match select(sending, timer).await {
        Either::Left((result, _)) => Some(result),
        Either::Right(_) => None,
    };
    match finished {
        Some(Ok(response)) if (200..300).contains(&response.status_code()) => Ok(()),
        Some(Ok(response)) => Err(format!("{target} answered {}", response.status_code())),
        Some(Err(_)) => Err(format!("{target}: the request failed")),
        None => Err(format!("{target}: no answer within {TIMEOUT_MS} ms")),
    }
}
