//! GET /openapi.json: the OpenAPI 3.1 description of every route (producer/static/openapi.json).
//! tests/support/admin_api.mjs checks real responses against it, and a test in crate::routes
//! that it documents the route table's rows, so it cannot drift from the code.

use jobs_shared::request::api_error::ApiError;
use worker::{Env, Response};

use crate::static_files;

pub async fn get(env: &Env) -> Result<Response, ApiError> {
    static_files::serve(env, "openapi.json", &[("content-type", "application/json")]).await
}
