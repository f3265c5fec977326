//! GET /openapi.json: the OpenAPI 3.1 description of every route, compiled into the Worker.
//! tests/support/admin_api.mjs checks real responses against it, and a test in crate::routes
//! that it documents the route table's rows, so it cannot drift from the code.

use jobs_shared::ApiError;
use worker::Response;

use crate::respond;

const DOCUMENT: &str = include_str!("../openapi.json");

pub async fn get() -> Result<Response, ApiError> {
    let response = Response::ok(DOCUMENT).map_err(|e| respond::internal(&e))?;
    respond::with_headers(response, &[("content-type", "application/json")])
}
