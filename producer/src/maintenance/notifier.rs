//! Outgoing notifications: a page (PagerDuty Events API v2) or a chat message (Slack-style
//! incoming webhook), one JSON POST bounded by a timeout. A 2xx is delivered; anything else is
//! an error the caller keeps in its outbox for the next tick. A page with no routing key goes
//! to chat instead, so a high-family problem still reaches someone; with neither configured
//! nothing is sent (GET /healthz shows which channels are set).

use std::time::Duration;

use futures::future::{select, Either};
use jobs_shared::escalation::EscalationConfig;
use jobs_shared::Escalation;
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
        (Escalation::Page, Some(key), _) => post_json(&config.pagerduty_url, &page(key)).await,
        (_, _, Some(url)) => post_json(url, &chat()).await,
        _ => return Ok(false),
    }
    .map(|()| true)
}

const TIMEOUT_MS: u64 = 10_000;

pub async fn post_json(url: &str, body: &Value) -> Result<(), String> {
    let headers = Headers::new();
    headers
        .set("content-type", "application/json")
        .map_err(|e| e.to_string())?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(body.to_string().into()));
    let request = Request::new_with_init(url, &init).map_err(|e| e.to_string())?;
    let fetch = Fetch::Request(request);
    let sending = Box::pin(fetch.send());
    let timer = Box::pin(Delay::from(Duration::from_millis(TIMEOUT_MS)));
    let finished = match select(sending, timer).await {
        Either::Left((result, _)) => Some(result),
        Either::Right(_) => None,
    };
    match finished {
        Some(Ok(response)) if (200..300).contains(&response.status_code()) => Ok(()),
        Some(Ok(response)) => Err(format!("{url} answered {}", response.status_code())),
        Some(Err(e)) => Err(format!("{url}: {e}")),
        None => Err(format!("{url}: no answer within {TIMEOUT_MS} ms")),
    }
}
