//! The LLM that ai_tagging calls: any server speaking the Anthropic Messages API, configured by
//! LLM_BASE_URL, LLM_API_KEY (secret), LLM_MODEL and the per-million-token prices
//! LLM_PRICE_INPUT_PER_MTOK / LLM_PRICE_OUTPUT_PER_MTOK (USD; Claude Sonnet 4's by default).
//! One call tags one item and reports what it cost.

use jobs_shared::budget::{TokenPrices, Usage};
use jobs_shared::handlers::ai_tags::{parse_tags, tagging_prompt, AiTags, TAGGING_SYSTEM_PROMPT};
use jobs_shared::handlers::llm_messages::{
    messages_url, most_a_call_uses, parse_reply, request_body, ANTHROPIC_VERSION,
    DEFAULT_LLM_BASE_URL, DEFAULT_LLM_MODEL,
};
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use jobs_shared::runtime::vars;
use worker::{Env, Headers, Method, Request, RequestInit};

use crate::outbound::fetch_timeout;
use crate::outbound::Outbound;
use jobs_shared::job::stored_result::MAX_RESPONSE_BYTES;
use jobs_store::feed_items::Item;

/// An API call over 30 s is given up and the item skipped.
pub const CALL_TIMEOUT_MS: u32 = 30_000;
/// Room for the tags object; a reply cut off here fails validation.
const MAX_TOKENS: u32 = 400;

pub struct Llm {
    url: String,
    api_key: String,
    model: String,
    pub prices: TokenPrices,
}

/// One item's call.
pub enum Call {
    /// `reply`: the model's text (kept in the run's `llm_responses` artifact).
    Tagged {
        tags: AiTags,
        usage: Usage,
        reply: String,
    },
    /// The model answered, but not with valid tags: billed, and the item stays untagged.
    /// `reply`: its text, or the whole body when it was no Messages API reply.
    Invalid {
        reason: String,
        usage: Usage,
        reply: String,
    },
    /// No answer to use (timeout, 5xx, 429, ...).
    Failed(JobError),
}

impl Call {
    pub fn usage(&self) -> Usage {
        match self {
            Call::Tagged { usage, .. } | Call::Invalid { usage, .. } => *usage,
            Call::Failed(_) => Usage::default(),
        }
    }
}

impl Llm {
    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn from_env(env: &Env) -> Result<Llm, JobError> {
        let not_configured = |message: String| JobError::new(ErrorClass::NotConfigured, message);
        let api_key = vars::string(env, "LLM_API_KEY")
            .ok_or_else(|| not_configured("ai_tagging needs the secret LLM_API_KEY".into()))?;
        let prices = TokenPrices::configured(
            vars::string(env, "LLM_PRICE_INPUT_PER_MTOK").as_deref(),
            vars::string(env, "LLM_PRICE_OUTPUT_PER_MTOK").as_deref(),
        )
        .map_err(|e| not_configured(format!("LLM prices: {e}")))?;
        let base = vars::string(env, "LLM_BASE_URL").unwrap_or(DEFAULT_LLM_BASE_URL.into());
        Ok(Llm {
            url: messages_url(&base),
            api_key,
            model: vars::string(env, "LLM_MODEL").unwrap_or(DEFAULT_LLM_MODEL.into()),
            prices,
        })
    }

    pub async fn tag(&self, outbound: &Outbound<'_>, item: &Item) -> Call {
        self.send(outbound, item).await.unwrap_or_else(Call::Failed)
    }

    async fn send(&self, outbound: &Outbound<'_>, item: &Item) -> Result<Call, JobError> {
        let prompt = tagging_prompt(&item.title, &item.url, item.description.as_deref());
        let body =
            request_body(&self.model, MAX_TOKENS, TAGGING_SYSTEM_PROMPT, &prompt).to_string();
        let headers = Headers::new();
        for (name, value) in [
            ("x-api-key", self.api_key.as_str()),
            ("anthropic-version", ANTHROPIC_VERSION),
            ("content-type", "application/json"),
        ] {
            headers.set(name, value).map_err(bad_config)?;
        }
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_headers(headers)
            .with_body(Some(body.as_str().into()));
        let request = Request::new_with_init(&self.url, &init).map_err(bad_config)?;
        let response = fetch_timeout::fetch(outbound, request, body.len(), CALL_TIMEOUT_MS).await?;
        let status = response.status_code();
        if matches!(status, 401 | 403) {
            return Err(JobError::new(
                ErrorClass::NotConfigured,
                format!("the LLM API refused LLM_API_KEY (HTTP {status})"),
            ));
        }
        fetch_timeout::check_status(&response)?;
        let text = response.body_capped(MAX_RESPONSE_BYTES).await?.text;
        Ok(match parse_reply(&text) {
            Err(reason) => Call::Invalid {
                reason: format!("{reason}; billed as the most the call could use"),
                usage: most_a_call_uses(body.len(), MAX_TOKENS),
                reply: text,
            },
            Ok(reply) => match parse_tags(&reply.text) {
                Ok(tags) => Call::Tagged {
                    tags,
                    usage: reply.usage,
                    reply: reply.text,
                },
                Err(reason) => Call::Invalid {
                    reason,
                    usage: reply.usage,
                    reply: reply.text,
                },
            },
        })
    }
}

fn bad_config(e: worker::Error) -> JobError {
    JobError::new(
        ErrorClass::NotConfigured,
        format!("cannot build the LLM request (check LLM_BASE_URL): {e}"),
    )
}
