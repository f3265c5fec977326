//! One delivered queue message: its decoded body, how often the queue has delivered it, and
//! what becomes of it (ack or retry). The batch crosses from JS in one call
//! (`queue_batch.js`), and the verdicts go back in one `ackAll` when every message is acked,
//! the usual case: not three calls per message each way.

use std::cell::Cell;

use jobs_shared::job::envelope::JobMessage;
use jobs_shared::retry::retry_policy::QueueDelayLimit;
use jobs_shared::runtime::js_json::from_json_bytes;
use serde_json::value::RawValue;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use worker::js_sys::{Array, Object, Reflect};
use worker::worker_sys::{Message as MessageSys, MessageBatch as MessageBatchSys};

#[wasm_bindgen(module = "/src/queue_batch.js")]
extern "C" {
    /// `[[attempts, body], ...]` for the batch's messages, in order, as UTF-8 bytes.
    #[wasm_bindgen(js_name = messagesJson)]
    fn messages_json(messages: &Array) -> Vec<u8>;
}

/// What becomes of a message: acked, or delivered again after a delay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    Ack,
    Retry { delay_secs: u64 },
}

impl Verdict {
    /// The retry's delay; `None` for an ack.
    pub fn retry_secs(self) -> Option<u64> {
        match self {
            Verdict::Ack => None,
            Verdict::Retry { delay_secs } => Some(delay_secs),
        }
    }
}

/// One of the batch's messages; [`Delivery::all`] keeps them in the batch's order.
pub struct Delivery {
    pub message: Result<JobMessage, String>,
    /// The queue's own delivery count (1 on first delivery). D1's `attempts` counts handler
    /// runs; this counts deliveries, including ones that never reached a handler.
    pub delivery_attempts: u32,
    /// The longest delay the queue takes (`QUEUE_MAX_DELAY_SECS`): what decides between a
    /// delayed retry and a keep in D1, and what every retry is clamped to.
    pub queue_limit: QueueDelayLimit,
    /// Set once the batch knows what becomes of it; sent to the queue by [`settle`].
    verdict: Cell<Option<Verdict>>,
}

impl Delivery {
    /// The batch's `messages` decoded; `Err` when the batch itself cannot be read.
    pub fn all(messages: &Array, queue_limit: QueueDelayLimit) -> Result<Vec<Delivery>, String> {
        let rows: Vec<(f64, Box<RawValue>)> = from_json_bytes(messages_json(messages))?;
        Ok(rows
            .into_iter()
            .map(|(attempts, body)| Delivery {
                message: JobMessage::parse(body.get()),
                delivery_attempts: (attempts as u32).max(1),
                queue_limit,
                verdict: Cell::new(None),
            })
            .collect())
    }

    pub fn job_id(&self) -> Option<&str> {
        self.message.as_ref().ok().map(|m| m.id.as_str())
    }

    pub fn ack(&self) {
        self.verdict.set(Some(Verdict::Ack));
    }

    /// Asks the queue to deliver this message again after `delay_secs` (clamped to its limit).
    pub fn retry(&self, delay_secs: u64) {
        let delay_secs = delay_secs.min(self.queue_limit.secs().into());
        self.verdict.set(Some(Verdict::Retry { delay_secs }));
    }

    pub fn settle(&self, verdict: Verdict) {
        match verdict {
            Verdict::Ack => self.ack(),
            Verdict::Retry { delay_secs } => self.retry(delay_secs),
        }
    }
}

/// Hands every verdict to the queue: one `ackAll` when all are acks, else one call per message.
/// `deliveries` are [`Delivery::all`] of `messages`. A message without a verdict is left to the
/// queue, which delivers it again.
pub fn settle(batch: &MessageBatchSys, messages: &Array, deliveries: &[Delivery]) {
    if deliveries
        .iter()
        .all(|d| d.verdict.get() == Some(Verdict::Ack))
    {
        let _ = batch.ack_all();
        return;
    }
    for (raw, delivery) in messages.iter().zip(deliveries) {
        let raw: MessageSys = raw.unchecked_into();
        match delivery.verdict.get() {
            Some(Verdict::Ack) => {
                let _ = raw.ack();
            }
            Some(Verdict::Retry { delay_secs }) => {
                let options = Object::new();
                let _ = Reflect::set(
                    &options,
                    &JsValue::from_str("delaySeconds"),
                    &JsValue::from_f64(delay_secs as f64),
                );
                let _ = raw.retry(options.into());
            }
            None => {}
        }
    }
}
