//! One batch of an `ai_tagging` run: its LLM calls' answers sorted into tagged items, items
//! to give back, and the spend.

use jobs_shared::budget::Usage;
use jobs_shared::retry::error_class::{ErrorClass, JobError};
use jobs_store::budgets::Spend;
use jobs_store::feed_items::{Item, Tagged};
use serde_json::json;

use super::llm::{Call, Llm};
use crate::job_events::SpanLog;

/// One batch's calls, sorted out.
pub struct Batch<'a> {
    pub tagged: Vec<Tagged<'a>>,
    /// Items to give back: answered badly or not at all.
    pub untagged: Vec<i64>,
    pub invalid: usize,
    pub failed: usize,
    pub spend: Spend,
    /// A failure that is the whole job's (429, a refused key), not the item's.
    pub job_error: Option<JobError>,
}

impl<'a> Batch<'a> {
    pub fn sort(items: &[Item], calls: &'a [Call], llm: &Llm, events: &SpanLog) -> Batch<'a> {
        let mut batch = Batch {
            tagged: Vec::new(),
            untagged: Vec::new(),
            invalid: 0,
            failed: 0,
            spend: Spend {
                cost_cents: 0.0,
                requests: calls.len() as u32,
                usage: Usage::default(),
            },
            job_error: None,
        };
        for (item, call) in items.iter().zip(calls) {
            batch.spend.usage += call.usage();
            batch.spend.cost_cents += llm.prices.cost_cents(call.usage());
            let (kind, reason) = match call {
                Call::Tagged { tags, .. } => {
                    batch.tagged.push(Tagged { id: item.id, tags });
                    continue;
                }
                Call::Invalid { reason, .. } => {
                    batch.invalid += 1;
                    ("invalid_reply", reason.clone())
                }
                Call::Failed(e) => {
                    batch.failed += 1;
                    if matches!(e.class, ErrorClass::RateLimited | ErrorClass::NotConfigured) {
                        batch.job_error.get_or_insert_with(|| e.clone());
                    }
                    ("call_failed", e.to_string())
                }
            };
            batch.untagged.push(item.id);
            let attrs = [
                ("item_id", json!(item.id)),
                ("kind", json!(kind)),
                ("error", json!(reason)),
            ];
            events.once("item.failed", "warn", &attrs);
        }
        batch
    }
}
