//! GET /openapi.json: the OpenAPI 3.1 description of every route, compiled into the Worker.
//! tests/openapi.test.mjs checks real responses against it, so it cannot drift from the code.

use jobs_shared::ApiError;
use worker::Response;

use crate::respond;

const DOCUMENT: &str = include_str!("../openapi.json");

pub fn get() -> Result<Response, ApiError> {
    let response = Response::ok(DOCUMENT).map_err(|e| respond::internal(&e))?;
    respond::with_headers(response, &[("content-type", "application/json")])
}
