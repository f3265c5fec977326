//! The Workers' one way onto a queue (enqueue, the sweep's re-sends, a chain's next steps, dead
//! jobs to their DLQ): one sendBatch per queue per 100 messages, never one subrequest per
//! message. A job's priority picks its family's lane (`Family::lane_for`). The jobs are always in D1 before they are sent, so a failed send is logged and
//! loses nothing: what was not accepted stays in the outbox for the sweep (or, for a DLQ, is
//! dead in D1 already). Both Workers read the queues' delay limit here too.

use std::sync::OnceLock;

use serde::Serialize;
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::worker_sys::Queue as QueueSys;
use worker::{console_error, console_warn, Env, Queue};

use crate::job::enqueue::NewJob;
use crate::job::envelope::JobMessage;
use crate::job::family::{Family, Lane};
use crate::retry::retry_policy::{DeliveryPlan, QueueDelayLimit};
use crate::runtime::js_json::to_js_array;

/// `QUEUE_MAX_DELAY_SECS` (see [`QueueDelayLimit`]), read once per isolate: a var changes only
/// with a deployment, which starts new isolates. A bad value is logged then, once, and the
/// default used.
pub fn queue_delay_limit(env: &Env) -> QueueDelayLimit {
    static LIMIT: OnceLock<QueueDelayLimit> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let (limit, warnings) =
            QueueDelayLimit::from_vars(|name| env.var(name).ok().map(|v| v.to_string()));
        for warning in warnings {
            console_warn!("config: {warning}");
        }
        limit
    })
}

/// Cloudflare Queues' sendBatch limit.
const MAX_SEND_BATCH: usize = 100;

/// One job's message for its next run.
pub struct Outgoing {
    pub family: Family,
    pub lane: Lane,
    pub message: JobMessage,
    pub delay_secs: u32,
}

impl Outgoing {
    /// A message for a job just accepted (enqueued, or a chain's next step); None when it is
    /// kept in D1 until the sweep sends it.
    pub fn new_job(job: &NewJob, correlation_id: &str) -> Option<Outgoing> {
        let DeliveryPlan::Send { delay_secs } = job.delivery else {
            return None;
        };
        Some(Outgoing {
            family: job.family,
            lane: job.family.lane_for(job.priority),
            message: JobMessage::stored(&job.id, job.job_type.as_str(), Some(correlation_id)),
            delay_secs,
        })
    }

    /// A message for a job read back from D1 (type, family and priority as stored); None for a
    /// family this build does not know.
    pub fn stored(job: Stored<'_>, delay_secs: u32) -> Option<Outgoing> {
        let family = Family::parse(job.family)?;
        Some(Outgoing {
            family,
            lane: family.lane_for(job.priority),
            message: JobMessage::stored(job.id, job.job_type, job.correlation_id),
            delay_secs,
        })
    }
}

/// A stored job's columns that its message and queue need.
pub struct Stored<'a> {
    pub id: &'a str,
    pub job_type: &'a str,
    pub family: &'a str,
    pub priority: i64,
    pub correlation_id: Option<&'a str>,
}

impl<'a> Stored<'a> {
    pub fn new(
        id: &'a str,
        job_type: &'a str,
        family: &'a str,
        priority: i64,
        correlation_id: Option<&'a str>,
    ) -> Stored<'a> {
        Stored {
            id,
            job_type,
            family,
            priority,
            correlation_id,
        }
    }
}

/// Where [`send_to`] sends: each message's lane of its family, or its family's DLQ.
#[derive(Clone, Copy)]
pub enum Destination {
    Lanes,
    DeadLetters,
}

impl Destination {
    fn binding(self, family: Family, lane: Lane) -> &'static str {
        match self {
            Destination::Lanes => family.lane_binding(lane),
            Destination::DeadLetters => family.dlq_binding(),
        }
    }
}

/// One message as `sendBatch` takes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SendRequest<'a> {
    body: &'a JobMessage,
    content_type: &'static str,
    delay_seconds: u32,
}

/// One sendBatch of up to 100 messages. The requests cross into JS as one JSON text
/// (runtime::js_json), not as three property sets and two conversions per message.
async fn send_batch(queue: &Queue, chunk: &[&Outgoing]) -> worker::Result<()> {
    let requests: Vec<SendRequest> = chunk
        .iter()
        .map(|o| SendRequest {
            body: &o.message,
            content_type: "json",
            delay_seconds: o.delay_secs,
        })
        .collect();
    let queue: &QueueSys = queue.as_ref().unchecked_ref();
    JsFuture::from(queue.send_batch(to_js_array(&requests)?, JsValue::UNDEFINED)?).await?;
    Ok(())
}

/// Sends messages to `to`, at most 100 per sendBatch; a failed send is logged. Returns the ids
/// the queues accepted.
pub async fn send_to(env: &Env, outgoing: &[Outgoing], to: Destination) -> Vec<String> {
    let mut accepted = Vec::with_capacity(outgoing.len());
    let mut bindings: Vec<&'static str> = outgoing
        .iter()
        .map(|o| to.binding(o.family, o.lane))
        .collect();
    bindings.sort_unstable();
    bindings.dedup();
    for binding in bindings {
        let of_queue: Vec<&Outgoing> = outgoing
            .iter()
            .filter(|o| to.binding(o.family, o.lane) == binding)
            .collect();
        for chunk in of_queue.chunks(MAX_SEND_BATCH) {
            let sent = match env.queue(binding) {
                Ok(queue) => send_batch(&queue, chunk).await,
                Err(e) => Err(e),
            };
            match sent {
                Ok(()) => accepted.extend(chunk.iter().map(|o| o.message.id.clone())),
                Err(e) => {
                    let ids: Vec<&str> = chunk.iter().map(|o| o.message.id.as_str()).collect();
                    console_error!(
                        "send of {} message(s) to {binding} failed: {e}; jobs {}",
                        chunk.len(),
                        ids.join(", ")
                    );
                }
            }
        }
    }
    accepted
}
