//! One outbound fetch bounded in time and size, with transport failures classified: every
//! handler that calls out goes through here, and through the batch's outbound gate
//! (crate::outbound), under a deadline (crate::deadline).

use jobs_shared::runtime::clock::now_ms;
use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::rc::Rc;

use async_lock::SemaphoreGuard;
use futures::StreamExt;
use jobs_shared::job::run_details::Bytes;
use jobs_shared::retry::error_class::{classify_http_status, ErrorClass, JobError};
use jobs_shared::util::body_cap::CappedBody;
use worker::{AbortController, Fetch, Fetcher, Request, Response};

use crate::deadline::within;
use crate::outbound::{count, Connection, Outbound};

/// The response's status classified, with its Retry-After honoured: 2xx is Ok.
pub fn check_status(response: &Response) -> Result<(), JobError> {
    let retry_after = response.headers().get("retry-after").ok().flatten();
    classify_http_status(response.status_code(), retry_after.as_deref(), now_ms())
}

/// A response and the batch connection it holds until dropped (its body may still be read
/// until `ends_at`, the end of the request's own timeout); what is read counts toward the
/// job's `bytes`.
pub struct Fetched<'a> {
    response: Response,
    controller: AbortController,
    ends_at: i64,
    bytes: Rc<Cell<Bytes>>,
    _connection: SemaphoreGuard<'a>,
}

impl Deref for Fetched<'_> {
    type Target = Response;
    fn deref(&self) -> &Response {
        &self.response
    }
}

impl DerefMut for Fetched<'_> {
    fn deref_mut(&mut self) -> &mut Response {
        &mut self.response
    }
}

/// A response body read up to a size, and whether there was more.
pub struct Body {
    pub text: String,
    pub truncated: bool,
}

impl Fetched<'_> {
    /// At most `max_bytes` of the body, within what is left of the request's timeout: a slow or
    /// endless body cannot hold the job, and a huge one is never read whole. The rest is
    /// abandoned (the fetch aborted). A body whose length is known and within the cap is read
    /// in one call (HTTP framing holds it to that length), any other chunk by chunk.
    pub async fn body_capped(mut self, max_bytes: usize) -> Result<Body, JobError> {
        let timeout_ms = (self.ends_at - now_ms()).max(1);
        let whole = self.declared_len().is_some_and(|n| n <= max_bytes);
        let mut body = CappedBody::new(max_bytes);
        let read = async {
            if whole {
                let bytes = self.response.bytes().await.map_err(read_failed)?;
                count(&self.bytes, 0, bytes.len());
                return Ok(body.push(&bytes).is_err());
            }
            let mut stream = self.response.stream().map_err(read_failed)?;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(read_failed)?;
                count(&self.bytes, 0, chunk.len());
                if body.push(&chunk).is_err() {
                    return Ok(true);
                }
            }
            Ok(false)
        };
        let truncated = match within(timeout_ms as u64, read).await {
            Some(Ok(truncated)) => truncated,
            Some(Err(e)) => return Err(e),
            None => {
                self.controller.abort();
                return Err(JobError::new(
                    ErrorClass::Timeout,
                    "the response body did not end within the request's timeout",
                ));
            }
        };
        if truncated {
            self.controller.abort();
        }
        // A cut body may end inside a character: that one becomes U+FFFD.
        let text = String::from_utf8_lossy(&body.into_bytes()).into_owned();
        Ok(Body { text, truncated })
    }

    /// The body's length as sent, when it is also the length read: a Content-Length without a
    /// Content-Encoding (the runtime decompresses, so a compressed body's read length is
    /// unknown until read).
    fn declared_len(&self) -> Option<usize> {
        let headers = self.response.headers();
        let encoded = headers
            .get("content-encoding")
            .ok()
            .flatten()
            .is_some_and(|e| !e.eq_ignore_ascii_case("identity"));
        if encoded {
            return None;
        }
        headers.get("content-length").ok().flatten()?.parse().ok()
    }
}

fn read_failed(e: worker::Error) -> JobError {
    JobError::new(ErrorClass::Network, format!("reading the response: {e}"))
}

/// Sends `request` (whose body is `body_bytes` long) on one of the batch's connections;
/// `timeout_ms` (for the answer and its body) starts once the connection is ours, so waiting
/// for one never times a request out, and is cut only where the job's deadline comes first.
pub async fn fetch<'a>(
    outbound: &Outbound<'a>,
    request: Request,
    body_bytes: usize,
    timeout_ms: u32,
) -> Result<Fetched<'a>, JobError> {
    fetch_via(outbound, Via::Internet, request, body_bytes, timeout_ms).await
}

/// Where a request goes: out to the internet, or to a Worker behind one of the consumer's
/// service bindings (which counts as a subrequest, so it takes a connection too).
#[derive(Clone, Copy)]
pub enum Via<'f> {
    Internet,
    Service(&'f Fetcher),
}

/// [`fetch`] by way of `via`. A request to a service is not aborted at its timeout (the
/// binding's fetch takes no signal): the job stops waiting for it, and the other Worker runs on
/// to its own limits.
pub async fn fetch_via<'a>(
    outbound: &Outbound<'a>,
    via: Via<'_>,
    request: Request,
    body_bytes: usize,
    timeout_ms: u32,
) -> Result<Fetched<'a>, JobError> {
    let connection = outbound.connection(timeout_ms).await?;
    send_via(outbound, via, connection, request, body_bytes).await
}

/// [`fetch`] on a connection already taken (with the time its request may take, as
/// `Outbound::connection` gives it): for a caller that times the request apart from the wait.
pub async fn send<'a>(
    outbound: &Outbound<'a>,
    connection: Connection<'a>,
    request: Request,
    body_bytes: usize,
) -> Result<Fetched<'a>, JobError> {
    send_via(outbound, Via::Internet, connection, request, body_bytes).await
}

async fn send_via<'a>(
    outbound: &Outbound<'a>,
    via: Via<'_>,
    connection: Connection<'a>,
    request: Request,
    body_bytes: usize,
) -> Result<Fetched<'a>, JobError> {
    let Connection { guard, timeout_ms } = connection;
    count(&outbound.bytes, body_bytes, 0);
    let ends_at = now_ms() + i64::from(timeout_ms);
    let controller = AbortController::default();
    let signal = controller.signal();
    let answer = async {
        match via {
            Via::Internet => Fetch::Request(request).send_with_signal(&signal).await,
            Via::Service(fetcher) => fetcher.fetch_request(request).await,
        }
    };
    match within(timeout_ms.into(), answer).await {
        Some(Ok(response)) => Ok(Fetched {
            response,
            controller,
            ends_at,
            bytes: outbound.bytes.clone(),
            _connection: guard,
        }),
        Some(Err(e)) => Err(JobError::new(
            ErrorClass::Network,
            format!("request failed: {e}"),
        )),
        None => {
            controller.abort();
            Err(JobError::new(
                ErrorClass::Timeout,
                format!("no response within {timeout_ms} ms"),
            ))
        }
    }
}
