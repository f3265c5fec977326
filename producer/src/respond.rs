//! JSON responses, and the one place an ApiError becomes HTTP.

use jobs_shared::request::api_error::ApiError;
use serde::Serialize;
use worker::{Response, Result};

pub fn json<T: Serialize>(status: u16, body: &T) -> std::result::Result<Response, ApiError> {
    Response::from_json(body)
        .map(|r| r.with_status(status))
        .map_err(ApiError::from)
}

/// `response` with each (name, value) header set, in order.
pub fn with_headers(
    mut response: Response,
    headers: &[(&str, &str)],
) -> std::result::Result<Response, ApiError> {
    for (name, value) in headers {
        response.headers_mut().set(name, value)?;
    }
    Ok(response)
}

pub fn error(err: &ApiError) -> Result<Response> {
    Ok(Response::from_json(&err.body())?.with_status(err.status))
}
