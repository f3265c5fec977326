//! A request to its row of the route table (crate::routes, matched by the shared `route`
//! module), through the row's access check; every failure leaves as the JSON error of
//! crate::respond, a 405 with the path's methods in `Allow`.

use std::future::Future;
use std::pin::Pin;

use jobs_shared::api::route::{lookup, Match, Params, Route};
use jobs_shared::job::defined_types;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::runtime::clock;
use jobs_shared::security::auth::{Caller, Scope};
use jobs_store::job_types;
use worker::{Context, Env, Response, Result};

use crate::admin::Admin;
use crate::request::Request;
use crate::{auth, respond};

/// What a handler answers, boxed so that one table holds handlers of every shape.
pub type Reply<'a> = Pin<Box<dyn Future<Output = std::result::Result<Response, ApiError>> + 'a>>;

/// What a route answers with; the request's path params are in its `Call`.
pub type Handler = for<'a> fn(Call<'a>) -> Reply<'a>;

/// Who may call a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone: liveness, the OpenAPI document, the dashboard's files.
    Public,
    /// An enqueue or admin token.
    Enqueue,
    /// An admin token.
    Admin,
    /// A METRICS_TOKENS or admin token (/metrics: a scraper needs no admin rights).
    Metrics,
}

/// A route's row in the table, besides its path and method.
pub struct Target {
    pub access: Access,
    pub handler: Handler,
}

/// What the runtime hosts a request with: the Worker's bindings, and its context for work that
/// must outlive the request (`waitUntil`).
#[derive(Clone, Copy)]
pub struct Host<'a> {
    pub env: &'a Env,
    pub ctx: &'a Context,
}

/// One request, as its handler gets it.
pub struct Call<'a> {
    pub req: &'a mut Request,
    pub env: &'a Env,
    /// For work that must outlive the request (`waitUntil`).
    pub ctx: &'a Context,
    params: Params<'a>,
    /// Who the row's access check let in (none on a route without one).
    caller: Option<Caller>,
}

impl<'a> Call<'a> {
    /// The path segment the route's pattern names `{name}`.
    pub fn param(&self, name: &str) -> &'a str {
        self.params.get(name)
    }

    /// Who calls: its token's name (never the token) and the job types it may use, from the
    /// access check already made, not a second one.
    pub fn caller(&self) -> Caller {
        self.caller.clone().unwrap_or_else(|| Caller {
            scope: Scope::Enqueue,
            name: auth::caller_name(self.req, self.env),
            types: None,
        })
    }

    pub fn host(&self) -> Host<'a> {
        Host {
            env: self.env,
            ctx: self.ctx,
        }
    }

    /// The caller, for an admin route's audit entries.
    pub fn admin(&self) -> Admin<'a> {
        Admin {
            env: self.env,
            actor: self.caller().name,
        }
    }
}

pub async fn handle(mut req: Request, host: Host<'_>, table: &[Route<Target>]) -> Result<Response> {
    let Host { env, ctx } = host;
    let path = req.path().to_string();
    let method = req.method();
    let answer = match lookup(table, &method, &path) {
        Match::Found { route, params } => {
            let call = Call {
                req: &mut req,
                env,
                ctx,
                params,
                caller: None,
            };
            run(&route.target, call).await
        }
        Match::MethodNotAllowed { allow } => missed(&req, env, &path).and_then(|()| {
            let error = ApiError::new(
                405,
                "method_not_allowed",
                format!("{method} is not allowed on {path}"),
            );
            let response = respond::json(error.status, &error.body())?;
            respond::with_headers(response, &[("allow", &allow)])
        }),
        Match::NotFound => missed(&req, env, &path).and_then(|()| {
            Err(ApiError::new(
                404,
                "not_found",
                format!("no route for {path}"),
            ))
        }),
    };
    let mut response = answer.or_else(|error| respond::error(&error))?;
    // No answer of ours is anything but what its content type says (docs/http-api.md "HTTP API
    // (producer)").
    response
        .headers_mut()
        .set("x-content-type-options", "nosniff")?;
    Ok(response)
}

async fn run(target: &Target, mut call: Call<'_>) -> std::result::Result<Response, ApiError> {
    let scope = match target.access {
        Access::Enqueue => Some(Scope::Enqueue),
        Access::Admin => Some(Scope::Admin),
        Access::Metrics => Some(Scope::Metrics),
        Access::Public => None,
    };
    if let Some(scope) = scope {
        // The types teams defined, as of at most `defined_types::REFRESH_MS` ago (one query per
        // isolate per that, none on most requests), for the handler to find them by name.
        let now = clock::now_ms();
        if defined_types::stale(now) {
            if let Ok(db) = call.env.d1("DB") {
                job_types::job_types_refresh(&db, now, false).await;
            }
        }
        call.caller = Some(auth::require(call.req, call.env, scope)?);
    }
    (target.handler)(call).await
}

/// A path with no route for the request: under /v1/admin, as on its routes, the admin scope
/// comes first, so only an operator learns whether an admin path or method exists.
fn missed(req: &Request, env: &Env, path: &str) -> std::result::Result<(), ApiError> {
    if path
        .trim_matches('/')
        .split('/')
        .take(2)
        .eq(["v1", "admin"])
    {
        auth::require(req, env, Scope::Admin)?;
    }
    Ok(())
}
