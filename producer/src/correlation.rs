//! The enqueue request's correlation id: its `traceparent`'s trace id or its `X-Request-Id`
//! (shared `correlation`), else a fresh one; returned in the `X-Request-Id` header.

use jobs_shared::observe::correlation;
use jobs_shared::request::api_error::ApiError;

use crate::random;
use crate::request::Request;

pub const HEADER: &str = "x-request-id";

pub fn of_request(req: &Request) -> Result<String, ApiError> {
    let header = |name: &str| req.headers().get(name).ok().flatten();
    if let Some(id) =
        correlation::from_headers(header("traceparent").as_deref(), header(HEADER).as_deref())
    {
        return Ok(id);
    }
    Ok(correlation::mint(random::bytes()?))
}
