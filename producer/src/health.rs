//! GET /healthz: liveness plus what is configured, so a missing secret shows before a job fails.
//! `escalation` says which notification channels are set: an unset one sends nothing. A refused
//! ENQUEUE_TOKEN_TYPES shows as such; why is in the producer's log (crate::auth), not here: this
//! route is public.

use jobs_shared::job::family::{Family, Lane};
use jobs_shared::observe::escalation::EscalationConfig;
use jobs_shared::request::api_error::ApiError;
use serde_json::json;
use worker::{Env, Response};

use crate::{auth, env_config, respond};

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
    // A refused ENQUEUE_TOKEN_TYPES refuses every enqueue token: as down as a missing queue.
    let fence_refused = auth::fence_refused(env);
    let ok = d1 && queues && !fence_refused;
    let body = json!({
        "status": if ok { "ok" } else { "degraded" },
        "d1": d1,
        "queues": queues,
        "auth": {
            "enqueue_tokens": env_config::string(env, "ENQUEUE_TOKENS").is_some(),
            "admin_tokens": env_config::string(env, "ADMIN_TOKENS").is_some(),
            "metrics_tokens": env_config::string(env, "METRICS_TOKENS").is_some(),
            "enqueue_token_types": if fence_refused { "refused" } else { "ok" },
        },
        "escalation": {
            "pagerduty": escalation.pagerduty_routing_key.is_some(),
            "slack": escalation.slack_webhook_url.is_some(),
            "digest": escalation.digest_webhook_url.is_some(),
            "dashboard_links": escalation.dashboard_url.is_some(),
        },
    });
    respond::json(if ok { 200 } else { 503 }, &body)
}
