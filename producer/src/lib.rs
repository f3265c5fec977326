//! The producer Worker: a thin adapter from HTTP, D1 and the queue bindings to the shared crate.

mod admin;
mod artifact_download;
mod auth;
mod body;
mod chain_view;
mod correlation;
mod dashboard;
mod dispatch;
mod enqueue;
mod enqueue_group;
mod env_config;
mod events;
mod health;
mod job_cancel;
mod job_view;
mod maintenance;
mod metrics;
mod openapi;
mod random;
mod request;
mod respond;
mod router;
mod routes;
mod static_files;
mod time_zone_data;

use worker::{event, Context, Env, Response, Result, ScheduleContext, ScheduledEvent};

#[event(start)]
fn start() {
    console_error_panic_hook::set_once();
}

/// Takes the runtime's Request as it is (see crate::request).
#[event(fetch)]
async fn fetch(req: web_sys::Request, env: Env, ctx: Context) -> Result<Response> {
    let host = router::Host {
        env: &env,
        ctx: &ctx,
    };
    router::handle(request::Request::new(req), host, routes::ROUTES).await
}

/// The cron trigger (every minute): the maintenance sweep, at the event's scheduled time.
#[event(scheduled)]
async fn scheduled(event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
    maintenance::run(&env, event.schedule() as i64).await;
}
