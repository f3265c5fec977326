//! The producer's static files (directory producer/static): the dashboard's page, the OpenAPI
//! document and the time-zone database (crate::time_zone_data). They are the assets of the
//! `jobs-static` Worker (producer/static/wrangler.toml), read through the STATIC service
//! binding: not compiled in, they cost the Worker's WASM, and so its cold start, nothing; not
//! the producer's own `[assets]`, they put no asset router in front of its API.

use jobs_shared::request::api_error::ApiError;
use jobs_shared::runtime::faults;
use worker::{Env, Response};

use crate::respond;

/// The file at `path` under producer/static, answered with `headers`.
pub async fn serve(env: &Env, path: &str, headers: &[(&str, &str)]) -> Result<Response, ApiError> {
    let response = Response::from_bytes(bytes(env, path).await?)?;
    respond::with_headers(response, headers)
}

/// The file at `path` under producer/static.
pub async fn bytes(env: &Env, path: &str) -> Result<Vec<u8>, ApiError> {
    let files = env.service("STATIC")?;
    let mut asset = files
        .fetch(format!("https://static.local/{path}"), None)
        .await?;
    if asset.status_code() != 200 {
        return Err(faults::internal(&format!(
            "asset {path} answered {}",
            asset.status_code()
        )));
    }
    asset.bytes().await.map_err(ApiError::from)
}
