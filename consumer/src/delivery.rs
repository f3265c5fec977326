//! One delivered queue message: its decoded body, how often the queue has delivered it, and
//! the ack/retry calls on the raw JS message.

use jobs_shared::{JobMessage, QueueDelayLimit};
use wasm_bindgen::{JsCast, JsValue};
use worker::js_sys::{Object, Reflect, JSON};
use worker::worker_sys::{Message as MessageSys, MessageBatch as MessageBatchSys};

pub struct Delivery {
    raw: MessageSys,
    pub message: Result<JobMessage, String>,
    /// The queue's own delivery count (1 on first delivery). D1's `attempts` counts handler
    /// runs; this counts deliveries, including ones that never reached a handler.
    pub delivery_attempts: u32,
    /// The longest delay the queue takes (`QUEUE_MAX_DELAY_SECS`): what decides between a
    /// delayed retry and a hold in D1, and what every retry is clamped to.
    pub queue_limit: QueueDelayLimit,
}

impl Delivery {
    pub fn all(batch: &MessageBatchSys, queue_limit: QueueDelayLimit) -> Vec<Delivery> {
        let Ok(messages) = batch.messages() else {
            return Vec::new();
        };
        messages
            .iter()
            .map(|m| Delivery::new(m.unchecked_into(), queue_limit))
            .collect()
    }

    fn new(raw: MessageSys, queue_limit: QueueDelayLimit) -> Delivery {
        let message = raw
            .body()
            .ok()
            .and_then(|body| JSON::stringify(&body).ok())
            .and_then(|text| text.as_string())
            .ok_or_else(|| "the message body is not JSON".to_string())
            .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
            .and_then(|value| JobMessage::parse(&value));
        let delivery_attempts = Reflect::get(&raw, &JsValue::from_str("attempts"))
            .ok()
            .and_then(|v| v.as_f64())
            .map_or(1, |n| n as u32);
        Delivery {
            raw,
            message,
            delivery_attempts,
            queue_limit,
        }
    }

    pub fn job_id(&self) -> Option<&str> {
        self.message.as_ref().ok().map(|m| m.id.as_str())
    }

    pub fn ack(&self) {
        let _ = self.raw.ack();
    }

    /// Asks the queue to deliver this message again after `delay_secs` (clamped to its limit).
    pub fn retry(&self, delay_secs: u64) {
        let options = Object::new();
        let delay = delay_secs.min(self.queue_limit.secs().into()) as f64;
        let _ = Reflect::set(
            &options,
            &JsValue::from_str("delaySeconds"),
            &JsValue::from_f64(delay),
        );
        let _ = self.raw.retry(options.into());
    }
}
