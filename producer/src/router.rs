//! Method and path to handler; every failure leaves as the design's JSON error.

use jobs_shared::{ApiError, Scope};
use worker::{Env, Method, Request, Response, Result};

use crate::{
    admin, admin_budgets, admin_rss_sources, auth, dashboard, enqueue, health, job_view, metrics,
    openapi, respond, schedule_api,
};

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
        // Admin scope or a METRICS_TOKENS token (checked inside).
        (["metrics"], Method::Get) => metrics::get(&req, env).await,
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
        (["openapi.json"], Method::Get) => openapi::get(),
        (["dashboard", ..], Method::Get) => dashboard::get(&req, env).await,
        (
            ["healthz"]
            | ["metrics"]
            | ["v1", "jobs"]
            | ["v1", "jobs", "batch"]
            | ["v1", "jobs", _],
            _,
        ) => Err(ApiError::new(
            405,
            "method_not_allowed",
            format!("{method:?} is not allowed on {path}"),
        )),
        (["v1", "admin", "schedules", rest @ ..], method) => {
            auth::require(&req, env, Scope::Admin)?;
            schedule_api::route(&mut req, env, rest, method).await
        }
        (["v1", "admin", "budgets", rest @ ..], method) => {
            auth::require(&req, env, Scope::Admin)?;
            admin_budgets::route(&mut req, env, rest, method).await
        }
        (["v1", "admin", "rss-sources", rest @ ..], method) => {
            auth::require(&req, env, Scope::Admin)?;
            admin_rss_sources::route(&mut req, env, rest, method).await
        }
        // Last, so any more specific /v1/admin route above takes precedence.
        (["v1", "admin", rest @ ..], method) => {
            auth::require(&req, env, Scope::Admin)?;
            admin::route(&mut req, env, rest, method).await
        }
        _ => Err(ApiError::new(
            404,
            "not_found",
            format!("no route for {path}"),
        )),
    }
}
