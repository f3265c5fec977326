//! The enqueue request's correlation id: its `traceparent`'s trace id or its `X-Request-Id`
//! (shared `correlation`), else a fresh one; returned in the `X-Request-Id` header.

use jobs_shared::{correlation, ApiError};
use worker::{Request, Response};

use crate::respond;

pub const HEADER: &str = "x-request-id";

pub fn of_request(req: &Request) -> Result<String, ApiError> {
    let header = |name: &str| req.headers().get(name).ok().flatten();
    if let Some(id) =
        correlation::from_headers(header("traceparent").as_deref(), header(HEADER).as_deref())
    {
        return Ok(id);
    }
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).map_err(|e| respond::internal(&e))?;
    Ok(correlation::mint(bytes))
}

pub fn with_header(mut response: Response, cid: &str) -> Result<Response, ApiError> {
    response
        .headers_mut()
        .set(HEADER, cid)
        .map_err(|e| respond::internal(&e))?;
    Ok(response)
}
