//! One outbound fetch bounded by a timeout (the request is aborted when it runs out), with
//! transport failures classified: every handler that calls out goes through here. The deadline
//! itself, `within`, also bounds the browser session's socket reads.

use std::future::Future;
use std::time::Duration;

use futures::future::{select, Either};
use jobs_shared::{classify_http_status, ErrorClass, JobError};
use worker::{AbortController, Delay, Fetch, Request, Response};

/// The response's status classified, with its Retry-After honoured: 2xx is Ok.
pub fn check_status(response: &Response) -> Result<(), JobError> {
    let retry_after = response.headers().get("retry-after").ok().flatten();
    classify_http_status(
        response.status_code(),
        retry_after.as_deref(),
        crate::now_ms(),
    )
}

pub async fn fetch(request: Request, timeout_ms: u32) -> Result<Response, JobError> {
    let controller = AbortController::default();
    let signal = controller.signal();
    let fetch = Fetch::Request(request);
    match within(timeout_ms.into(), fetch.send_with_signal(&signal)).await {
        Some(Ok(response)) => Ok(response),
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

/// `future`'s output, or `None` when `ms` milliseconds pass first (it is then dropped).
pub async fn within<T>(ms: u64, future: impl Future<Output = T>) -> Option<T> {
    let timer = Delay::from(Duration::from_millis(ms));
    match select(Box::pin(future), Box::pin(timer)).await {
        Either::Left((output, _)) => Some(output),
        Either::Right(_) => None,
    }
}
