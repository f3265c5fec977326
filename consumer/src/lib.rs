//! The consumer Worker: a thin adapter from queue batches to the shared crate's decisions.
//!
//! `queue` is exported by hand rather than through `#[event(queue)]`: worker 0.8.7 hides each
//! message's `attempts` (workers-rs #1057), and the macro's glue panics (trapping the instance
//! and redelivering the whole batch) whenever the handler returns `Err`. Here every message is
//! acked or retried explicitly and the export always resolves.

mod artifacts;
mod batch;
mod budget_gate;
mod chain;
mod dead_letters;
mod deadline;
mod delivery;
mod flow_gate;
mod flow_limiter;
mod handlers;
mod invocation;
mod job_context;
mod job_events;
mod outbound;
mod signed_request;
mod web_url;

use jobs_shared::observe::log_line::{fault, LogLevel};
use jobs_shared::runtime::queue_send::queue_delay_limit;
use wasm_bindgen::prelude::*;
use worker::worker_sys::{Context as ContextSys, MessageBatch as MessageBatchSys};
use worker::Env;

#[wasm_bindgen]
pub async fn queue(batch: MessageBatchSys, env: Env, _ctx: ContextSys) -> Result<JsValue, JsValue> {
    console_error_panic_hook::set_once();
    let queue = batch.queue().map(String::from).unwrap_or_default();
    let messages = batch.messages().unwrap_or_default();
    let deliveries = match delivery::Delivery::all(&messages, queue_delay_limit(&env)) {
        Ok(deliveries) => deliveries,
        Err(e) => {
            fault(
                LogLevel::Error,
                "batch",
                format_args!("batch from {queue} unreadable, retried: {e}"),
            );
            let _ = batch.retry_all(JsValue::UNDEFINED);
            return Ok(JsValue::UNDEFINED);
        }
    };
    let invocation = invocation::Invocation::start(&env);
    batch::run(&queue, &deliveries, &env, &invocation).await;
    delivery::settle(&batch, &messages, &deliveries);
    Ok(JsValue::UNDEFINED)
}
