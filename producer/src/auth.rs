//! Bearer tokens from the ENQUEUE_TOKENS and ADMIN_TOKENS secrets (comma-separated, so a token
//! can be rotated without downtime); the comparison itself lives in the shared crate.

use jobs_shared::{ApiError, Scope, Tokens};
use worker::{Env, Request};

use crate::env_config;

pub fn require(req: &Request, env: &Env, scope: Scope) -> Result<Scope, ApiError> {
    let tokens = Tokens::from_secrets(
        env_config::string(env, "ENQUEUE_TOKENS").as_deref(),
        env_config::string(env, "ADMIN_TOKENS").as_deref(),
    );
    let header = req.headers().get("authorization").ok().flatten();
    tokens.authorize(header.as_deref(), scope)
}
