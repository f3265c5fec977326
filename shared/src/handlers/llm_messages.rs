//! The Anthropic Messages API shape: `POST {base}/v1/messages` with `x-api-key` and
//! `anthropic-version` headers, a reply whose `content` holds text blocks and whose `usage`
//! counts the tokens billed. Any server speaking it (the real API, a gateway, a local fake) works.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::budget::Usage;

pub const ANTHROPIC_VERSION: &str = "2023-06-01";
pub const DEFAULT_LLM_BASE_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_LLM_MODEL: &str = "claude-sonnet-4-20250514";

/// The endpoint under `base` (a trailing slash is fine).
pub fn messages_url(base: &str) -> String {
    format!("{}/v1/messages", base.trim_end_matches('/'))
}

/// A single-turn request.
pub fn request_body(model: &str, max_tokens: u32, system: &str, user: &str) -> Value {
    json!({
        "model": model,
        "max_tokens": max_tokens,
        "system": system,
        "messages": [{ "role": "user", "content": user }],
    })
}

/// A reply's text (its text blocks joined) and what it was billed.
#[derive(Debug, PartialEq)]
pub struct Reply {
    pub text: String,
    pub usage: Usage,
}

#[derive(Deserialize)]
struct Wire {
    content: Vec<Block>,
    usage: Usage,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
}

/// What a call whose reply gave no readable `usage` is billed: the most it could have used. A
/// tokenizer makes at most one token per byte of the request, and the reply is cut at
/// `max_tokens`; so a reply the budget cannot read still spends it (docs/app-guide.md "AI tagging
/// and budgets").
pub fn most_a_call_uses(request_bytes: usize, max_tokens: u32) -> Usage {
    Usage {
        input_tokens: request_bytes as u64,
        output_tokens: max_tokens.into(),
    }
    .bounded()
}

/// Parses a 2xx reply body; `Err` says what is missing (no usage means nothing to bill by).
pub fn parse_reply(body: &str) -> Result<Reply, String> {
    let wire: Wire =
        serde_json::from_str(body).map_err(|e| format!("not a Messages API reply: {e}"))?;
    let text = wire
        .content
        .iter()
        .filter(|b| b.kind == "text")
        .map(|b| b.text.as_str())
        .collect::<Vec<_>>()
        .join("");
    Ok(Reply {
        text,
        usage: wire.usage.bounded(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::MAX_CALL_TOKENS;

    #[test]
    fn url_and_request() {
        assert_eq!(
            messages_url("https://api.anthropic.com/"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            messages_url("http://127.0.0.1:9"),
            "http://127.0.0.1:9/v1/messages"
        );
        let body = request_body("m", 400, "sys", "hi");
        assert_eq!(
            body["messages"][0],
            json!({"role": "user", "content": "hi"})
        );
        assert_eq!(
            (body["model"].as_str(), body["max_tokens"].as_u64()),
            (Some("m"), Some(400))
        );
    }

    #[test]
    fn replies_give_text_and_usage() {
        let body = r#"{"id":"msg_1","type":"message","role":"assistant","model":"m",
            "content":[{"type":"text","text":"{\"a\":"},{"type":"tool_use","id":"x"},{"type":"text","text":"1}"}],
            "stop_reason":"end_turn","usage":{"input_tokens":1000,"output_tokens":200,"cache_read_input_tokens":0}}"#;
        let reply = parse_reply(body).unwrap();
        assert_eq!(reply.text, "{\"a\":1}");
        assert_eq!(
            reply.usage,
            Usage {
                input_tokens: 1000,
                output_tokens: 200
            }
        );
        assert!(parse_reply(r#"{"content":[]}"#)
            .unwrap_err()
            .contains("usage"));
        assert!(parse_reply("<html>").is_err());
    }

    #[test]
    fn a_reply_cannot_claim_more_than_a_call_can_use() {
        let body =
            r#"{"content":[],"usage":{"input_tokens":18446744073709551615,"output_tokens":7}}"#;
        let usage = parse_reply(body).unwrap().usage;
        assert_eq!(
            (usage.input_tokens, usage.output_tokens),
            (MAX_CALL_TOKENS, 7)
        );
        assert!(
            parse_reply(r#"{"content":[],"usage":{"input_tokens":-1,"output_tokens":0}}"#).is_err()
        );
        let most = most_a_call_uses(1_500, 400);
        assert_eq!((most.input_tokens, most.output_tokens), (1_500, 400));
    }
}
