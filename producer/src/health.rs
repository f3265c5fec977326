//! GET /healthz: liveness plus what is configured, so a missing secret shows before a job fails.
//! `escalation` says which notification channels are set: an unset one sends nothing.

use jobs_shared::observe::escalation::EscalationConfig;
use jobs_shared::{ApiError, Family, Lane};
use serde_json::json;
use worker::{Env, Response};

use crate::{env_config, respond};

pub async fn get(env: &Env) -> Result<Response, ApiError> {
    let d1 = match env.d1("DB") {
        Ok(db) => jobs_store::d1::ping(&db).await,
        Err(_) => false,
    };
    let queues = Family::ALL.iter().all(|f| {
        [Lane::Normal, Lane::Express]
            .into_iter()
            .all(|lane| env.queue(f.lane_binding(lane)).is_ok())
    });
    let escalation = EscalationConfig::from_vars(|name| env_config::string(env, name));
    let body = json!({
        "status": if d1 && queues { "ok" } else { "degraded" },
        "d1": d1,
        "queues": queues,
        "auth": {
            "enqueue_tokens": env_config::string(env, "ENQUEUE_TOKENS").is_some(),
            "admin_tokens": env_config::string(env, "ADMIN_TOKENS").is_some(),
            "metrics_tokens": env_config::string(env, "METRICS_TOKENS").is_some(),
        },
        "escalation": {
            "pagerduty": escalation.pagerduty_routing_key.is_some(),
            "slack": escalation.slack_webhook_url.is_some(),
            "digest": escalation.digest_webhook_url.is_some(),
            "dashboard_links": escalation.dashboard_url.is_some(),
        },
    });
    respond::json(if d1 && queues { 200 } else { 503 }, &body)
}
