//! The producer's static files (directory producer/static): the dashboard's page, the OpenAPI
//! document and the time-zone database (crate::time_zone_data). They are the assets of the
//! `jobs-static` Worker (producer/static/wrangler.toml), read through the STATIC service
//! binding: not compiled in, they cost the Worker's WASM, and so its cold start, nothing; not
//! the producer's own `[assets]`, they put no asset router in front of its API.

use jobs_shared::request::api_error::ApiError;
use worker::{Env, Response};

use crate::respond;

/// The file at `path` under producer/static, answered with `headers`.
pub async fn serve(env: &Env, path: &str, headers: &[(&str, &str)]) -> Result<Response, ApiError> {
    let response =
        Response::from_bytes(bytes(env, path).await?).map_err(|e| respond::internal(&e))?;
    respond::with_headers(response, headers)
}

/// The file at `path` under producer/static.
pub async fn bytes(env: &Env, path: &str) -> Result<Vec<u8>, ApiError> {
    let files = env.service("STATIC").map_err(|e| respond::internal(&e))?;
    let mut asset = files
        .fetch(format!("https://static.local/{path}"), None)
        .await
        .map_err(|e| respond::internal(&e))?;
    if asset.status_code() != 200 {
        return Err(respond::internal(&format!(
            "asset {path} answered {}",
            asset.status_code()
        )));
    }
    asset.bytes().await.map_err(|e| respond::internal(&e))
}
