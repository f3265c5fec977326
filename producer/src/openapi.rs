//! GET /openapi.json: the OpenAPI 3.1 description of every route, compiled into the Worker.
//! tests/openapi.test.mjs checks real responses against it, so it cannot drift from the code.

use jobs_shared::ApiError;
use worker::{Headers, Response};

use crate::respond;

const DOCUMENT: &str = include_str!("../openapi.json");

pub fn get() -> Result<Response, ApiError> {
    let headers = Headers::new();
    headers
        .set("content-type", "application/json")
        .map_err(|e| respond::internal(&e))?;
    Ok(Response::ok(DOCUMENT)
        .map_err(|e| respond::internal(&e))?
        .with_headers(headers))
}
