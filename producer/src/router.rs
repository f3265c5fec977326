//! Method and path to handler; every failure leaves as the design's JSON error.

use jobs_shared::{ApiError, Scope};
use worker::{Env, Method, Request, Response, Result};

use crate::{admin_stats, auth, enqueue, health, job_view, respond};

pub async fn handle(req: Request, env: &Env) -> Result<Response> {
    match route(req, env).await {
        Ok(resp) => Ok(resp),
        Err(err) => respond::error(&err),
    }
}

async fn route(mut req: Request, env: &Env) -> std::result::Result<Response, ApiError> {
    let path = req.path();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let method = req.method();
    match (segments.as_slice(), method.clone()) {
        (["healthz"], Method::Get) => health::get(env).await,
        (["v1", "jobs"], Method::Post) => {
            auth::require(&req, env, Scope::Enqueue)?;
            enqueue::one(&mut req, env).await
        }
        (["v1", "jobs", "batch"], Method::Post) => {
            auth::require(&req, env, Scope::Enqueue)?;
            enqueue::batch(&mut req, env).await
        }
        (["v1", "jobs", id], Method::Get) => {
            auth::require(&req, env, Scope::Enqueue)?;
            job_view::get(env, id).await
        }
        (["v1", "admin", "stats"], Method::Get) => {
            auth::require(&req, env, Scope::Admin)?;
            admin_stats::get(env).await
        }
        (["healthz"] | ["v1", "jobs"] | ["v1", "jobs", "batch"] | ["v1", "jobs", _], _) => {
            Err(ApiError::new(
                405,
                "method_not_allowed",
                format!("{method:?} is not allowed on {path}"),
            ))
        }
        _ => Err(ApiError::new(
            404,
            "not_found",
            format!("no route for {path}"),
        )),
    }
}
