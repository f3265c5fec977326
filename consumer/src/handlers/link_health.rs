//! `link_health_check`: checks the payload's URLs, or the links table's, a bounded number at a
//! time. Each check is a HEAD (a GET when HEAD is refused with 405/501), following redirects by
//! hand up to a limit so the final URL is known; it records status, latency, final URL and the
//! start of a failing streak, and marks a link dead after N consecutive failures. A page's
//! anchors are fetched once (`fetch_targets`).
//! D1: one read and one write per job. The job itself succeeds: broken links are its findings.
//! No probe starts that could not end inside the job's deadline, and a request the platform
//! had no subrequest or connection for (`capacity`) fails no link: those links are left
//! unchecked (counted in the result) and, checked longest ago, come first in the next run.

use jobs_shared::runtime::clock::now_ms;
use std::collections::{HashMap, HashSet};

use futures::stream::{self, StreamExt};
use jobs_shared::handlers::link_health::{
    after_check, head_refused, healthy, is_redirect, LinkState, LinkStatus, DEFAULT_DEAD_AFTER,
    DEFAULT_LINK_CONCURRENCY, MAX_REDIRECTS,
};
use jobs_shared::job::payloads::LinkHealthCheckPayload;
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use serde_json::{json, Value};
use web_sys::Url;
use worker::{Headers, Method, Request, RequestInit, RequestRedirect};

use crate::job_context::{self, HandlerRun, JobContext};
use crate::outbound::fetch_timeout::{self, Fetched};
use crate::outbound::Outbound;
use crate::web_url;
use jobs_store::links::{self, Checked};

const CHECK_TIMEOUT_MS: u32 = 10_000;
/// What a probe (a few requests, redirects included) is given before the deadline to start.
const PROBE_MS: i64 = 30_000;

pub async fn run(ctx: &JobContext<'_>) -> HandlerRun {
    HandlerRun::of(check_links(ctx).await)
}

async fn check_links(ctx: &JobContext<'_>) -> Result<Option<Value>, JobError> {
    let (job, job_type, env, outbound) = (ctx.job, ctx.job_type, ctx.env, ctx.outbound);
    let deadline = now_ms() + i64::from(job_type.spec().timeout_ms);
    let payload: LinkHealthCheckPayload = job_context::payload(job)?;
    let db = env.d1("DB")?;
    let known = links::link_list_states(&db, payload.urls.as_deref()).await?;
    // The table's links in the store's order: checked longest ago first.
    let table_order: Vec<String> = known.iter().map(|row| row.url.clone()).collect();
    let mut states: HashMap<String, LinkState> = known
        .into_iter()
        .map(|row| {
            let state = row.state();
            (row.url, state)
        })
        .collect();
    let urls: Vec<String> = match payload.urls {
        Some(mut urls) => {
            // A URL listed twice is checked once, not probed again with its state reset.
            let mut seen = HashSet::new();
            urls.retain(|url| seen.insert(url.clone()));
            urls
        }
        None => table_order,
    };
    let dead_after = payload.dead_after.unwrap_or(DEFAULT_DEAD_AFTER);
    let concurrency = payload.concurrency.unwrap_or(DEFAULT_LINK_CONCURRENCY) as usize;
    let (targets, target_of) = fetch_targets(&urls);
    let probes: Vec<Option<Probe>> = stream::iter(targets.iter())
        .map(|target| check(outbound, target, deadline))
        .buffered(concurrency)
        .collect()
        .await;
    let unchecked = target_of.iter().filter(|&&t| probes[t].is_none()).count();

    let now = now_ms();
    let checked: Vec<Checked> = urls
        .into_iter()
        .zip(target_of)
        .filter_map(|(url, t)| Some((url, probes[t].clone()?, &targets[t])))
        .map(|(url, probe, target)| {
            let prev = states.remove(&url).unwrap_or_default();
            let (state, status) = after_check(prev, probe.ok(), now, dead_after);
            Checked {
                // Not redirected: the link as listed, its fragment kept.
                final_url: probe
                    .final_url
                    .filter(|end| end != target)
                    .unwrap_or_else(|| url.clone()),
                url,
                status: status.as_str(),
                status_code: probe.status,
                error: probe.error,
                latency_ms: probe.latency_ms,
                consecutive_failures: state.consecutive_failures,
                first_failure_at: state.first_failure_at,
            }
        })
        .collect();
    if !checked.is_empty() {
        links::link_set_checked_many(&db, &checked, now).await?;
    }
    let count = |s: LinkStatus| checked.iter().filter(|c| c.status == s.as_str()).count();
    Ok(Some(json!({
        "checked": checked.len(),
        "ok": count(LinkStatus::Ok),
        "failing": count(LinkStatus::Failing),
        "dead": count(LinkStatus::Dead),
        "unchecked": unchecked,
        "links": checked,
    })))
}

/// What to fetch for `urls`, each once, and which of them each URL is: a fragment never
/// reaches the server, so a page's anchors (`/docs#a`, `/docs#b`) are one request, and the
/// parser's normal form makes `HTTP://Host/` and `http://host/` one too. An unparsable URL
/// stays as it is, for its probe to report.
fn fetch_targets(urls: &[String]) -> (Vec<String>, Vec<usize>) {
    let mut targets: Vec<String> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let target_of = (urls.iter())
        .map(|url| {
            let target = web_url::parse(url).map_or_else(
                |_| url.clone(),
                |parsed| {
                    parsed.set_hash("");
                    parsed.href()
                },
            );
            *index.entry(target).or_insert_with_key(|target| {
                targets.push(target.clone());
                targets.len() - 1
            })
        })
        .collect();
    (targets, target_of)
}

/// One link's check.
#[derive(Clone)]
struct Probe {
    status: Option<u16>,
    error: Option<String>,
    final_url: Option<String>,
    latency_ms: i64,
}

impl Probe {
    fn ok(&self) -> bool {
        self.error.is_none() && self.status.is_some_and(healthy)
    }
}

/// Why a probe found no final answer.
enum ProbeError {
    /// The link's fault: an HTTP status with no way on, a timeout, too many redirects...
    Link(Option<u16>, String),
    /// The platform's own limits (no subrequest or connection in time): nothing to say of
    /// the link.
    Capacity,
}

fn link_error(e: JobError) -> ProbeError {
    match e.class {
        ErrorClass::Capacity => ProbeError::Capacity,
        _ => ProbeError::Link(None, e.message),
    }
}

/// One link's check; `None` when it could not be checked: no time left before `deadline`, or
/// the platform's limits stopped it. A link is never marked failing for those.
async fn check(outbound: &Outbound<'_>, url: &str, deadline: i64) -> Option<Probe> {
    if now_ms() + PROBE_MS > deadline {
        return None;
    }
    let mut latency_ms = 0;
    let (status, error, final_url) = match follow(outbound, url, &mut latency_ms).await {
        Ok((status, final_url)) => {
            let error = (!healthy(status)).then(|| format!("HTTP {status}"));
            (Some(status), error, Some(final_url))
        }
        Err(ProbeError::Capacity) => return None,
        Err(ProbeError::Link(status, error)) => (status, Some(error), None),
    };
    Some(Probe {
        status,
        error,
        final_url,
        latency_ms,
    })
}

/// The final answer's status and URL, following up to MAX_REDIRECTS redirects; `latency_ms`
/// adds up its requests' times, each from when it had a connection (a wait behind other links
/// is the batch's, not the link's).
async fn follow(
    outbound: &Outbound<'_>,
    url: &str,
    latency_ms: &mut i64,
) -> Result<(u16, String), ProbeError> {
    let mut current = web_url::parse(url).map_err(|e| ProbeError::Link(None, e))?;
    for _ in 0..=MAX_REDIRECTS {
        let head = request(outbound, &current, Method::Head, latency_ms).await?;
        let response = if head_refused(head.status_code()) {
            // The HEAD's connection goes back first: a probe holding one while it waits for
            // another would deadlock the batch's gate once every connection is so held.
            drop(head);
            request(outbound, &current, Method::Get, latency_ms).await?
        } else {
            head
        };
        let status = response.status_code();
        if !is_redirect(status) {
            return Ok((status, current.href()));
        }
        let location = response.headers().get("location").ok().flatten();
        let Some(next) = location.and_then(|l| web_url::join(&current, &l)) else {
            return Err(ProbeError::Link(
                Some(status),
                format!("HTTP {status} without a usable Location"),
            ));
        };
        current = next;
    }
    Err(ProbeError::Link(
        None,
        format!("more than {MAX_REDIRECTS} redirects"),
    ))
}

async fn request<'a>(
    outbound: &Outbound<'a>,
    url: &Url,
    method: Method,
    latency_ms: &mut i64,
) -> Result<Fetched<'a>, ProbeError> {
    let headers = Headers::new();
    let _ = headers.set("user-agent", "cf-jobs-link-check/1");
    let mut init = RequestInit::new();
    init.with_method(method)
        .with_headers(headers)
        .with_redirect(RequestRedirect::Manual);
    let request = Request::new_with_init(&url.href(), &init)
        .map_err(|e| ProbeError::Link(None, e.to_string()))?;
    let connection = outbound
        .connection(CHECK_TIMEOUT_MS)
        .await
        .map_err(link_error)?;
    let sent_at = now_ms();
    let response = fetch_timeout::send(outbound, connection, request, 0).await;
    *latency_ms += now_ms() - sent_at;
    response.map_err(link_error)
}
