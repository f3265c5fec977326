//! The producer's static files (`[assets]` in wrangler.toml, directory producer/static): the
//! dashboard's page and the OpenAPI document. Read through the ASSETS binding rather than
//! compiled in, they cost the Worker's WASM, and so its cold start, nothing.

use jobs_shared::ApiError;
use worker::{Env, Response};

use crate::respond;

/// The file at `path` under producer/static, answered with `headers`.
pub async fn serve(env: &Env, path: &str, headers: &[(&str, &str)]) -> Result<Response, ApiError> {
    let assets = env.assets("ASSETS").map_err(|e| respond::internal(&e))?;
    let mut asset = assets
        .fetch(format!("https://assets.local/{path}"), None)
        .await
        .map_err(|e| respond::internal(&e))?;
    if asset.status_code() != 200 {
        return Err(respond::internal(&format!(
            "asset {path} answered {}",
            asset.status_code()
        )));
    }
    let bytes = asset.bytes().await.map_err(|e| respond::internal(&e))?;
    let response = Response::from_bytes(bytes).map_err(|e| respond::internal(&e))?;
    respond::with_headers(response, headers)
}
