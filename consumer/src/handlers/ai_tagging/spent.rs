//! What one ai_tagging run spent and what the LLM answered, for its run record (docs/app-guide.md
//! "Run records and artifacts"): the cost, the model, its calls and tokens, and one JSON line per
//! call, kept as the run's `llm_responses` artifact.

use jobs_shared::job::run_details::{ArtifactBody, LlmUse};
use jobs_shared::retry::error_class::JobError;
use jobs_shared::util::text_prefix::byte_prefix;
use serde_json::{json, Value};

use super::batch::Batch;
use super::llm::{Call, Llm};
use crate::artifacts;
use crate::job_context::{HandlerRun, JobContext};
use jobs_store::feed_items::Item;

/// A reply kept in a response line is cut here: the artifact stays bounded by the run's calls.
const MAX_REPLY_BYTES: usize = 2 * 1024;

#[derive(Default)]
pub struct Spent {
    pub cost_cents: f64,
    llm: Option<LlmUse>,
    /// One JSON line per call.
    responses: Vec<String>,
}

impl Spent {
    /// A batch's calls, made: their cost, tokens and answers.
    pub fn add(&mut self, llm: &Llm, batch: &Batch, items: &[Item], calls: &[Call]) {
        self.cost_cents += batch.spend.cost_cents;
        let llm_use = self.llm.get_or_insert_with(|| LlmUse {
            model: llm.model().to_string(),
            calls: 0,
            input_tokens: 0,
            output_tokens: 0,
        });
        llm_use.add(batch.spend.usage, batch.spend.requests);
        for (item, call) in items.iter().zip(calls) {
            let usage = call.usage();
            let mut line = json!({
                "item_id": item.id,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
            });
            let (status, field, text) = match call {
                Call::Tagged { reply, .. } => {
                    ("tagged", "reply", byte_prefix(reply, MAX_REPLY_BYTES))
                }
                Call::Invalid { reason, reply, .. } => {
                    line["reason"] = Value::from(reason.as_str());
                    ("invalid", "reply", byte_prefix(reply, MAX_REPLY_BYTES))
                }
                Call::Failed(e) => ("failed", "error", e.message.as_str()),
            };
            line["status"] = Value::from(status);
            line[field] = Value::from(text);
            self.responses.push(line.to_string());
        }
    }

    /// The run's record: its outcome, cost and LLM use, and the responses as its artifact.
    pub async fn into_run(
        self,
        ctx: &JobContext<'_>,
        outcome: Result<Option<Value>, JobError>,
    ) -> HandlerRun {
        let mut artifacts = Vec::new();
        if !self.responses.is_empty() {
            let body = self.responses.join("\n") + "\n";
            let kind = "llm_responses";
            let made = ArtifactBody {
                kind,
                content_type: "application/x-ndjson",
                body: &body,
            };
            artifacts.push(artifacts::keep(ctx, &made).await);
        }
        HandlerRun {
            cost_cents: self.cost_cents,
            llm: self.llm,
            ..HandlerRun::of(outcome).with_artifacts(artifacts)
        }
    }
}
