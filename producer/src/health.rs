//! GET /healthz: liveness plus what is configured, so a missing secret shows before a job fails.

use jobs_shared::{ApiError, Family};
use serde_json::json;
use worker::{Env, Response};

use crate::{env_config, respond};

pub async fn get(env: &Env) -> Result<Response, ApiError> {
    let d1 = match env.d1("DB") {
        Ok(db) => db.prepare("SELECT 1").run().await.is_ok(),
        Err(_) => false,
    };
    let queues = Family::ALL
        .iter()
        .all(|f| env.queue(f.queue_binding()).is_ok());
    let body = json!({
        "status": if d1 && queues { "ok" } else { "degraded" },
        "d1": d1,
        "queues": queues,
        "auth": {
            "enqueue_tokens": env_config::string(env, "ENQUEUE_TOKENS").is_some(),
            "admin_tokens": env_config::string(env, "ADMIN_TOKENS").is_some(),
        },
    });
    respond::json(if d1 && queues { 200 } else { 503 }, &body)
}
