//! The producer Worker: a thin adapter from HTTP, D1 and the queue bindings to the shared crate.

mod admin_stats;
mod auth;
mod body;
mod dispatch;
mod enqueue;
mod env_config;
mod health;
mod job_store;
mod job_view;
mod respond;
mod router;

use worker::{event, Context, Env, Request, Response, Result};

#[event(start)]
fn start() {
    console_error_panic_hook::set_once();
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    router::handle(req, &env).await
}
