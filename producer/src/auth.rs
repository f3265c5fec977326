//! Bearer tokens from the ENQUEUE_TOKENS, ADMIN_TOKENS and METRICS_TOKENS secrets
//! (comma-separated, so a token can be rotated without downtime; an entry may name its token,
//! `webapp:<token>`), and the ENQUEUE_TOKEN_TYPES var that fences named enqueue tokens to some
//! job types; the comparison and the fence live in the shared crate.

use std::sync::OnceLock;

use jobs_shared::observe::log_line::{fault, LogLevel};
use jobs_shared::request::api_error::ApiError;
use jobs_shared::security::actor::actor_of;
use jobs_shared::security::auth::{Caller, Scope, TokenSecrets, Tokens};
use worker::Env;

use crate::env_config;
use crate::request::Request;

pub fn require(req: &Request, env: &Env, scope: Scope) -> Result<Caller, ApiError> {
    tokens(env).authorize(authorization(req).as_deref(), scope)
}

/// The lists, read once per isolate: a secret changes only with a new deployment, which starts
/// new isolates. A refused ENQUEUE_TOKEN_TYPES is logged then, with why (once per isolate).
fn tokens(env: &Env) -> &'static Tokens {
    static TOKENS: OnceLock<Tokens> = OnceLock::new();
    TOKENS.get_or_init(|| {
        let [enqueue, admin, metrics] = ["ENQUEUE_TOKENS", "ADMIN_TOKENS", "METRICS_TOKENS"]
            .map(|name| env_config::string(env, name));
        let enqueue_types = env_config::json_text(env, "ENQUEUE_TOKEN_TYPES");
        let tokens = Tokens::from_secrets(TokenSecrets {
            enqueue: enqueue.as_deref(),
            admin: admin.as_deref(),
            metrics: metrics.as_deref(),
            enqueue_types: enqueue_types.as_deref(),
        });
        if let Some(why) = tokens.fence_error() {
            let message =
                format!("ENQUEUE_TOKEN_TYPES is refused, and with it every enqueue token: {why}");
            fault(LogLevel::Error, "config", message);
        }
        tokens
    })
}

/// Whether ENQUEUE_TOKEN_TYPES is refused (GET /healthz).
pub fn fence_refused(env: &Env) -> bool {
    tokens(env).fence_error().is_some()
}

/// Who calls with `req`: its token's name, or the token's fingerprint (never the token). For a
/// route whose access check already passed, to record who did what.
pub fn caller_name(req: &Request, env: &Env) -> String {
    require(req, env, Scope::Enqueue)
        .map_or_else(|_| actor_of(authorization(req).as_deref()), |c| c.name)
}

fn authorization(req: &Request) -> Option<String> {
    req.headers().get("authorization").ok().flatten()
}
