//! GET /openapi.json: the OpenAPI 3.1 description of every route, compiled into the Worker.
//! The integration tests check real responses against it (tests/support/admin_api.mjs), and
//! tests/admin.test.mjs that every admin route is documented, so it cannot drift from the code.

use jobs_shared::ApiError;
use worker::Response;

use crate::respond;

const DOCUMENT: &str = include_str!("../openapi.json");

pub fn get() -> Result<Response, ApiError> {
    let response = Response::ok(DOCUMENT).map_err(|e| respond::internal(&e))?;
    respond::with_headers(response, &[("content-type", "application/json")])
}
