//! Validation of enqueue requests (`POST /v1/jobs` and `/v1/jobs/batch`): turns
//! untrusted JSON into a [`NewJob`] ready to write, or an [`ApiError`] that names
//! the field to fix. Pure: the id and the clock come in as arguments.

use crate::job::callback;
use crate::job::family::Family;
use crate::job::flow_control::{Limits, MAX_FLOW_KEY_CHARS};
use crate::job::job_type::JobType;
use crate::job::lifecycle::JobStatus;
use crate::job::payloads::PAYLOAD_FIELD;
use crate::job::registry::MAX_ATTEMPTS;
use crate::job::workflow_group::GroupPayload;
use crate::job::workflow_step::{check_name, checked_inputs, Earlier};
use crate::job::workflow_wait::WaitPayload;
use crate::request::api_error::ApiError;
use crate::request::field_error::{decode_fields, empty_object, invalid, join, not_an_object};
use crate::retry::retry_policy::{plan_delivery_at, DeliveryPlan, QueueDelayLimit};
use crate::retry::retry_request::{to_stored, JobRetry};
use crate::util::time_fmt::parse_rfc3339;
use serde::Deserialize;
use serde_json::Value;
use std::ops::RangeInclusive;

/// Matches the Cloudflare Queues message limit, so any accepted payload could
/// also travel inline if a handler ever needs it to.
pub const MAX_PAYLOAD_BYTES: usize = 128 * 1024;

/// The most the rows of one enqueue request may take as the INSERT binds them (one JSON
/// value): below D1's limit of 2,000,000 bytes on one value. The body cap alone cannot bound
/// it: a payload is stored as a string inside the rows, so its quotes and backslashes are
/// escaped again, and a number such as `1e15` is stored as `1000000000000000.0`.
pub const MAX_STORED_BYTES: usize = 1_900_000;

/// A request whose rows would take `stored_bytes` is refused past [`MAX_STORED_BYTES`] (413,
/// naming `field`), before anything is written.
pub fn check_stored_size(stored_bytes: usize, field: &str) -> Result<(), ApiError> {
    if stored_bytes <= MAX_STORED_BYTES {
        return Ok(());
    }
    let message = format!(
        "the jobs of this request take {stored_bytes} bytes stored; the limit is \
         {MAX_STORED_BYTES} (escaped characters and long numbers count as stored)"
    );
    Err(ApiError::new(413, "stored_too_large", message).with_field(field))
}

/// Batch limit: one D1 batch and one `sendBatch` (which takes at most 100).
pub const MAX_BATCH: usize = 100;

/// How far ahead a job may be scheduled.
pub const MAX_SCHEDULE_AHEAD_SECS: i64 = 31_536_000;

/// The longest a job may wait past its due time before it expires (`expires_at`).
pub const MAX_EXPIRES_AFTER_SECS: i64 = 31_536_000;

/// Why a job that expired was skipped (its `error.message`; the class is `expired`).
pub const EXPIRED_UNRUN: &str = "its expires_at passed before it started; skipped, not run";

/// The highest per-job priority (enqueue, operators and aging all stop there).
pub const MAX_PRIORITY: i64 = 100;

/// Per-job priority: from `EXPRESS_PRIORITY` a job takes its family's express lane
/// (docs/app-guide.md "Families").
const PRIORITY: RangeInclusive<i64> = 0..=MAX_PRIORITY;

const MAX_DEDUP_KEY_CHARS: usize = 256;
/// A dedup key outlives its job for at most a week (well within the retention of finished jobs,
/// `RETAIN_SUCCEEDED_DAYS`, 90 days by default, which a window cannot outlive).
const DEDUP_WINDOW_SECS: RangeInclusive<i64> = 1..=604_800;
/// A debounce's quiet period: 2 s to an hour (a burst runs at the latest five of them after its
/// first enqueue). At least 2 s: a queue message may run its job up to a second early
/// (`EARLY_TOLERANCE_MS` in the store's claim).
const DEBOUNCE_SECS: RangeInclusive<i64> = 2..=3_600;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnqueueRequest {
    #[serde(rename = "type")]
    pub job_type: String,
    #[serde(default = "empty_object")]
    pub payload: Value,
    pub priority: Option<i64>,
    pub delay_seconds: Option<i64>,
    pub run_at: Option<String>,
    pub dedup_key: Option<String>,
    pub max_attempts: Option<i64>,
    /// A preset's name or a policy object (crate::retry::retry_request).
    pub retry: Option<Value>,
    /// When the job is skipped unless it has started by then: RFC 3339, or seconds from now.
    pub expires_at: Option<String>,
    pub expires_in_seconds: Option<i64>,
    /// Jobs to run one after the other once this one succeeds (see [`crate::job::chain`]).
    pub steps: Option<Value>,
    /// The job's name in its chain, which later steps' `inputs` name it by
    /// (crate::job::workflow_step).
    pub name: Option<String>,
    /// Earlier steps whose results this step takes (crate::job::workflow_step).
    pub inputs: Option<Vec<String>>,
    /// Where the job's end (a chain's first job: its chain's end) is delivered
    /// (crate::job::callback).
    pub callback: Option<Value>,
    /// The job's key for its type's flow control, in place of its payload's key field
    /// (crate::job::flow_control).
    pub flow_key: Option<String>,
    /// The job's own flow control limits (`concurrency`, `rate`), in place of its type's, or,
    /// with a `flow_key`, for a type without flow control.
    pub flow_limits: Option<Value>,
    /// How long the `dedup_key` outlives the job: an enqueue with the key within it is answered
    /// with this job, finished or not.
    pub dedup_window_seconds: Option<i64>,
    /// A burst of enqueues with the `dedup_key` runs once, this long after the last of them,
    /// with its payload.
    pub debounce_seconds: Option<i64>,
}

/// An accepted job, ready to be written to D1 and (per `delivery`) sent.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    pub id: String,
    pub job_type: JobType,
    pub family: Family,
    /// Compact JSON.
    pub payload: String,
    pub priority: i64,
    pub dedup_key: Option<String>,
    pub max_attempts: u32,
    /// The job's own retry policy as stored (compact JSON); `None` for its type's.
    pub retry_policy: Option<String>,
    /// Its own flow key, when the request named one (crate::job::flow_control).
    pub flow_key: Option<String>,
    /// Its own flow limits as stored (compact JSON of `Limits`), when the request gave them.
    pub flow_limits: Option<String>,
    /// Until when its `dedup_key` answers with it whatever its state (`dedup_window_seconds`).
    pub dedup_until_ms: Option<i64>,
    /// A debounced job's quiet period: an enqueue with its key while it still waits moves it
    /// this far ahead, with the new payload (`debounce_seconds`).
    pub debounce_ms: Option<i64>,
    /// When the job is due; never before the request.
    pub run_at_ms: i64,
    /// Past this, the job is skipped without running; after `run_at_ms` when set.
    pub expires_at_ms: Option<i64>,
    /// `Send` with the queue delay when due within the queue's delay limit,
    /// `SendLater` (status `scheduled`) beyond it.
    pub delivery: DeliveryPlan,
    /// The chain steps that follow this job, compact JSON; `None` outside a chain.
    pub steps: Option<String>,
    /// Its name in its chain (crate::job::workflow_step).
    pub name: Option<String>,
    /// The earlier steps whose results it takes, a JSON array of their names.
    pub inputs: Option<String>,
    /// Its callback's target as stored (crate::job::callback).
    pub callback: Option<String>,
}

impl NewJob {
    /// The state it is written in: `queued` for its message to run it, `scheduled` while it is
    /// kept in D1.
    pub fn initial_status(&self) -> JobStatus {
        match self.delivery {
            DeliveryPlan::Send { .. } => JobStatus::Queued,
            DeliveryPlan::SendLater { .. } => JobStatus::Scheduled,
        }
    }
}

/// Validates one enqueue request body. A past `run_at` means "due now"; a job due beyond `limit`
/// is kept in D1.
pub fn validate_enqueue(
    body: &Value,
    id: String,
    now_ms: i64,
    limit: QueueDelayLimit,
) -> Result<NewJob, ApiError> {
    validate_job(body, id, now_ms, limit, Earlier::First)
}

/// Validates a chain's next step as the consumer enqueues it: as [`validate_enqueue`], but its
/// `inputs` name steps whose names are in D1 (checked when it entered the chain).
pub fn validate_next_step(
    step: &Value,
    id: String,
    now_ms: i64,
    limit: QueueDelayLimit,
) -> Result<NewJob, ApiError> {
    validate_job(step, id, now_ms, limit, Earlier::Unknown)
}

/// [`validate_enqueue`], with the names `inputs` may take.
fn validate_job(
    body: &Value,
    id: String,
    now_ms: i64,
    limit: QueueDelayLimit,
    earlier: Earlier<'_>,
) -> Result<NewJob, ApiError> {
    if !body.is_object() {
        return Err(not_an_object());
    }
    let req: EnqueueRequest = decode_fields(body)?;
    let job_type = JobType::parse(&req.job_type).filter(|t| t.accepts_jobs());
    let job_type = job_type.ok_or_else(|| {
        let message = format!("unknown job type \"{}\"", req.job_type);
        invalid("unknown_type", "type", message)
    })?;
    let payload = checked_payload(job_type, &req.payload)?;
    let priority = in_range("priority", req.priority, PRIORITY)?.unwrap_or(0);
    let (dedup_until_ms, debounce_ms) = dedup_terms(&req, now_ms)?;
    let run_at_ms = match debounce_ms {
        Some(quiet) => now_ms + quiet,
        // A wait is due at its timeout, unless its event comes first (its payload was checked).
        None if job_type == JobType::WAIT => {
            let timeout = WaitPayload::parse(&req.payload).map_or(0, |wait| wait.timeout_secs);
            now_ms + timeout * 1000
        }
        None => due_at(&req, now_ms)?,
    };
    key_length("dedup_key", req.dedup_key.as_deref(), MAX_DEDUP_KEY_CHARS)?;
    let retry = match &req.retry {
        Some(value) => Some(JobRetry::from_request(value, "retry")?),
        None => None,
    };
    let max_attempts = in_range("max_attempts", req.max_attempts, MAX_ATTEMPTS)?
        .map(|n| n as u32)
        .or(retry.and_then(|r| r.preset_attempts))
        .unwrap_or(job_type.spec().max_attempts);
    let expires_at_ms = expires_at(&req, now_ms, run_at_ms)?;
    let flow_limits = own_flow(&req, job_type)?;
    let inputs = workflow_terms(&req, job_type, earlier, now_ms)?;
    let callback = callback::checked(req.callback.as_ref())?;
    let steps = match &req.steps {
        Some(steps) => {
            // Checking returns the steps as given, so they are stored as the request has them.
            steps_after("steps", steps, now_ms, req.name.as_deref())?;
            Some(steps.to_string())
        }
        None => None,
    };

    Ok(NewJob {
        id,
        job_type,
        family: job_type.family(),
        payload,
        priority,
        dedup_key: req.dedup_key,
        max_attempts,
        retry_policy: retry.map(|r| to_stored(&r.policy).to_string()),
        flow_key: req.flow_key,
        flow_limits,
        dedup_until_ms,
        debounce_ms,
        run_at_ms,
        expires_at_ms,
        delivery: plan_delivery_at(run_at_ms, now_ms, limit),
        steps,
        name: req.name,
        inputs,
        callback,
    })
}

/// A job's part in a workflow (docs/app-guide.md "Workflows"): its `name`, the `inputs` it takes
/// from the steps before it (`earlier`), returned as stored, and for a `group` its branches,
/// each checked as a step after the same steps.
fn workflow_terms(
    req: &EnqueueRequest,
    job_type: JobType,
    earlier: Earlier<'_>,
    now_ms: i64,
) -> Result<Option<String>, ApiError> {
    check_name(req.name.as_deref())?;
    let inputs = checked_inputs(req.inputs.as_deref(), earlier)?;
    if inputs.is_some() {
        takes_inputs(job_type.as_str(), &req.payload, "")?;
    }
    if job_type != JobType::GROUP && job_type != JobType::WAIT {
        return Ok(inputs);
    }
    if let Earlier::First = earlier {
        let message = format!(
            "a {} is a chain's step: put it in the steps of the job before it",
            job_type.as_str()
        );
        return Err(invalid("invalid_field", "type", message));
    }
    let timed = [
        ("delay_seconds", req.delay_seconds.is_some()),
        ("run_at", req.run_at.is_some()),
    ];
    if let Some((field, _)) = timed.into_iter().find(|(_, given)| *given) {
        let message = match job_type == JobType::WAIT {
            true => "a wait is due at its timeout: give payload.timeout_seconds",
            false => "a group starts when the step before it ends: delay its branches instead",
        };
        return Err(invalid("invalid_field", field, message));
    }
    if job_type == JobType::WAIT {
        return Ok(inputs);
    }
    // Checked by its type already: this only reads it.
    let group = GroupPayload::parse(&req.payload)
        .map_err(|e| invalid("invalid_payload", join(PAYLOAD_FIELD, &e.field), e.message))?;
    for (i, spec) in group.specs().into_iter().enumerate() {
        let at = || group.spec_field(i);
        checked_spec(at, "branch", spec, &BRANCH_FORBIDDEN, now_ms, earlier)?;
        // Its branches take the group's inputs, and a `for_each` branch its element.
        if inputs.is_some() || group.for_each.is_some() {
            let (kind, payload) = (spec["type"].as_str().unwrap_or_default(), &spec["payload"]);
            takes_inputs(kind, payload, &format!("{}.", at()))?;
        }
        if spec.get("type").and_then(Value::as_str) == Some(JobType::GROUP.as_str()) {
            let message = "a group's branch cannot be a group";
            return Err(invalid("invalid_field", join(&at(), "type"), message));
        }
    }
    Ok(inputs)
}

/// A job of type `job_type` given inputs can deliver them: an `http` one sends them in its JSON
/// body, so it needs a method that sends one and a body that is an object, or none (the field
/// `{at}payload.…` otherwise).
fn takes_inputs(job_type: &str, payload: &Value, at: &str) -> Result<(), ApiError> {
    if job_type != JobType::HTTP.as_str() {
        return Ok(());
    }
    let method = payload["method"]
        .as_str()
        .unwrap_or("POST")
        .to_ascii_uppercase();
    if method == "GET" || method == "HEAD" {
        let message = "a step with inputs sends them in its body, which a GET or HEAD has not";
        return Err(invalid(
            "invalid_payload",
            format!("{at}payload.method"),
            message,
        ));
    }
    let body = payload
        .get("body")
        .filter(|b| !b.is_null() && !b.is_object());
    if body.is_some() {
        let message = "a step with inputs sends them in its JSON body: give an object, or none";
        return Err(invalid(
            "invalid_payload",
            format!("{at}payload.body"),
            message,
        ));
    }
    Ok(())
}

/// The job's own flow control (docs/app-guide.md "Flow control"): a `flow_key` keys it in place
/// of its type's key field, `flow_limits` replace its type's limits; a type without flow
/// control takes both or neither (the key has nothing to key, the limits nothing to count by).
/// Returns the limits as stored.
fn own_flow(req: &EnqueueRequest, job_type: JobType) -> Result<Option<String>, ApiError> {
    key_length("flow_key", req.flow_key.as_deref(), MAX_FLOW_KEY_CHARS)?;
    let limits = match &req.flow_limits {
        Some(value) => Some(Limits::parse(value, "flow_limits")?),
        None => None,
    };
    if job_type.flow().is_none() && req.flow_key.is_some() != limits.is_some() {
        let what = match limits {
            Some(_) => "is required with flow_limits",
            None => "needs flow_limits",
        };
        let message = format!("{what}: {} has no flow control", job_type.as_str());
        return Err(invalid("invalid_field", "flow_key", message));
    }
    Ok(limits.map(|l| serde_json::to_string(&l).unwrap_or_default()))
}

/// A key field (`dedup_key`, `flow_key`), when given, is 1 to `max` characters.
fn key_length(field: &str, key: Option<&str>, max: usize) -> Result<(), ApiError> {
    match key {
        Some(key) if key.is_empty() || key.chars().count() > max => Err(invalid(
            "invalid_field",
            field,
            format!("must be 1 to {max} characters"),
        )),
        _ => Ok(()),
    }
}

/// The dedup key's window (until when, in ms) and the debounce's quiet period (ms), each only
/// with a `dedup_key`, which they extend; a debounced job is due after its quiet period, so it
/// takes no delay or `run_at` of its own.
fn dedup_terms(req: &EnqueueRequest, now_ms: i64) -> Result<(Option<i64>, Option<i64>), ApiError> {
    let window = in_range(
        "dedup_window_seconds",
        req.dedup_window_seconds,
        DEDUP_WINDOW_SECS,
    )?;
    let debounce = in_range("debounce_seconds", req.debounce_seconds, DEBOUNCE_SECS)?;
    for (field, given) in [
        ("dedup_window_seconds", window),
        ("debounce_seconds", debounce),
    ] {
        if given.is_some() && req.dedup_key.is_none() {
            return Err(invalid(
                "invalid_field",
                field,
                "needs a dedup_key, whose life it extends",
            ));
        }
    }
    if debounce.is_some() && (req.delay_seconds.is_some() || req.run_at.is_some()) {
        let message = "a debounced job is due debounce_seconds after the last enqueue: give no delay_seconds or run_at";
        return Err(invalid("conflicting_fields", "debounce_seconds", message));
    }
    Ok((
        window.map(|secs| now_ms + secs * 1000),
        debounce.map(|secs| secs * 1000),
    ))
}

/// The payload as compact JSON, once it is within the size limit and valid for its type.
fn checked_payload(job_type: JobType, payload: &Value) -> Result<String, ApiError> {
    let json = payload.to_string();
    if json.len() > MAX_PAYLOAD_BYTES {
        let message = format!(
            "payload is {} bytes; the limit is {MAX_PAYLOAD_BYTES}",
            json.len()
        );
        return Err(ApiError::new(413, "payload_too_large", message).with_field(PAYLOAD_FIELD));
    }
    job_type.validate_payload(payload).map_err(|e| {
        // Paths inside the payload become `payload.<path>`; the payload itself stays `payload`.
        let field = if e.field == PAYLOAD_FIELD {
            e.field
        } else {
            join(PAYLOAD_FIELD, &e.field)
        };
        invalid("invalid_payload", field, e.message)
    })?;
    Ok(json)
}

/// When the job is due, from `delay_seconds` or `run_at` (at most one of them).
fn due_at(req: &EnqueueRequest, now_ms: i64) -> Result<i64, ApiError> {
    let ahead = 0..=MAX_SCHEDULE_AHEAD_SECS;
    match (req.delay_seconds, &req.run_at) {
        (Some(_), Some(_)) => Err(invalid(
            "conflicting_fields",
            "run_at",
            "give either delay_seconds or run_at, not both",
        )),
        (Some(delay), None) => {
            in_range("delay_seconds", Some(delay), ahead)?;
            Ok(now_ms.saturating_add(delay * 1000))
        }
        (None, Some(run_at)) => {
            let at = timestamp("run_at", run_at)?;
            if at.saturating_sub(now_ms) > MAX_SCHEDULE_AHEAD_SECS * 1000 {
                return Err(invalid(
                    "out_of_range",
                    "run_at",
                    "must be at most one year ahead",
                ));
            }
            Ok(at.max(now_ms))
        }
        (None, None) => Ok(now_ms),
    }
}

/// The RFC 3339 timestamp `text` of `field` as Unix ms.
fn timestamp(field: &str, text: &str) -> Result<i64, ApiError> {
    parse_rfc3339(text).ok_or_else(|| {
        let message = "must be an RFC 3339 timestamp, e.g. 2025-01-01T00:00:00Z";
        invalid("invalid_field", field, message)
    })
}

/// When the job expires, from `expires_at` or `expires_in_seconds` (at most one): after it is
/// due (`run_at_ms`), and at most [`MAX_EXPIRES_AFTER_SECS`] after that.
fn expires_at(req: &EnqueueRequest, now_ms: i64, run_at_ms: i64) -> Result<Option<i64>, ApiError> {
    let (field, at) = match (req.expires_in_seconds, &req.expires_at) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "conflicting_fields",
                "expires_at",
                "give either expires_in_seconds or expires_at, not both",
            ))
        }
        (Some(secs), None) => {
            let most = MAX_SCHEDULE_AHEAD_SECS + MAX_EXPIRES_AFTER_SECS;
            in_range("expires_in_seconds", Some(secs), 1..=most)?;
            ("expires_in_seconds", now_ms.saturating_add(secs * 1000))
        }
        (None, Some(text)) => ("expires_at", timestamp("expires_at", text)?),
        (None, None) => return Ok(None),
    };
    if at <= run_at_ms {
        let message = "must be after the job is due (now, or its delay_seconds / run_at)";
        return Err(invalid("out_of_range", field, message));
    }
    if at - run_at_ms > MAX_EXPIRES_AFTER_SECS * 1000 {
        let message = "must be at most one year after the job is due";
        return Err(invalid("out_of_range", field, message));
    }
    Ok(Some(at))
}

/// Validates a batch body `{jobs: [...]}`, all or nothing: the first bad job
/// fails the batch, its error's field prefixed `jobs[i]`. `ids` mints one id per job.
pub fn validate_batch(
    body: &Value,
    mut ids: impl FnMut() -> String,
    now_ms: i64,
    limit: QueueDelayLimit,
) -> Result<Vec<NewJob>, ApiError> {
    let Some(object) = body.as_object() else {
        return Err(not_an_object());
    };
    if let Some(key) = object.keys().find(|k| *k != "jobs") {
        return Err(invalid(
            "unknown_field",
            key.as_str(),
            "only \"jobs\" is allowed",
        ));
    }
    let jobs = match object.get("jobs") {
        Some(Value::Array(jobs)) => jobs,
        _ => return Err(invalid("invalid_field", "jobs", "must be an array of jobs")),
    };
    if jobs.is_empty() {
        return Err(invalid(
            "invalid_field",
            "jobs",
            "must contain at least one job",
        ));
    }
    if jobs.len() > MAX_BATCH {
        return Err(invalid(
            "batch_too_large",
            "jobs",
            format!("{} jobs; at most {MAX_BATCH} per batch", jobs.len()),
        ));
    }
    jobs.iter()
        .enumerate()
        .map(|(i, job)| {
            let at = || format!("jobs[{i}]");
            validate_item(at, "job", job, &mut ids, now_ms, limit, Earlier::First)
        })
        .collect()
}

/// Validates one `item` of a list (a batch's job, a chain's step) as `POST /v1/jobs` would; `at`
/// spells its place (`jobs[2]`), which prefixes its error's field (only an error spells it),
/// and `noun` names it. `id` is minted only for an item that is an object.
pub(crate) fn validate_item(
    at: impl Fn() -> String,
    noun: &str,
    item: &Value,
    id: impl FnOnce() -> String,
    now_ms: i64,
    limit: QueueDelayLimit,
    earlier: Earlier<'_>,
) -> Result<NewJob, ApiError> {
    if !item.is_object() {
        let message = format!("each {noun} must be a JSON object");
        return Err(invalid("invalid_field", at(), message));
    }
    validate_job(item, id(), now_ms, limit, earlier).map_err(|e| ApiError {
        field: Some(join(&at(), e.field.as_deref().unwrap_or_default())),
        ..e
    })
}

fn in_range(
    field: &str,
    value: Option<i64>,
    range: RangeInclusive<i64>,
) -> Result<Option<i64>, ApiError> {
    match value {
        Some(v) if !range.contains(&v) => Err(invalid(
            "out_of_range",
            field,
            format!("must be between {} and {}", range.start(), range.end()),
        )),
        _ => Ok(value),
    }
}

/// Steps one chain may carry, and follow-ups one result may add (the chain is a workflow, not
/// a bulk loader).
pub const MAX_STEPS: usize = 20;

/// A step may not set these: a step is due when the one before it ends (or at its `run_at`,
/// whichever is later: a workflow's sleep until a time), so it may expire only relative to
/// that (`expires_in_seconds`); it has no key of its own to dedup on (nor a flow key or limits:
/// its type's flow control holds it), cannot nest a chain inside the chain, and calls back
/// through its chain's first job.
const STEP_FORBIDDEN: [&str; 8] = [
    "callback",
    "expires_at",
    "dedup_key",
    "steps",
    "flow_key",
    "flow_limits",
    "dedup_window_seconds",
    "debounce_seconds",
];

/// What a group's branch may not set beyond what a step may not: it takes the group's name
/// and inputs (crate::job::workflow_group).
const BRANCH_FORBIDDEN: [&str; 2] = ["name", "inputs"];

/// Checks one spec of a list (a chain's step, a group's branch: the `noun`) at `at`, which may
/// not set the fields a step may not, nor the `also_forbidden`; only checked, since the queue
/// limit matters once it is enqueued.
fn checked_spec(
    at: impl Fn() -> String,
    noun: &str,
    spec: &Value,
    also_forbidden: &[&str],
    now_ms: i64,
    earlier: Earlier<'_>,
) -> Result<(), ApiError> {
    let forbidden = [&STEP_FORBIDDEN[..], also_forbidden].concat();
    let refused =
        (spec.as_object()).and_then(|object| forbidden.iter().find(|k| object.contains_key(**k)));
    if let Some(key) = refused {
        let message = format!("not allowed in a {noun}");
        return Err(ApiError::new(422, "unknown_field", message).with_field(join(&at(), key)));
    }
    let limit = QueueDelayLimit::DEFAULT;
    validate_item(at, noun, spec, String::new, now_ms, limit, earlier).map_err(|e| ApiError {
        message: leave_out(&e.message, &forbidden),
        ..e
    })?;
    Ok(())
}

/// An unknown field's message without `names` among the fields it says were expected: a step is
/// not offered the fields it may not set.
fn leave_out(message: &str, names: &[&str]) -> String {
    let Some((head, list)) = message.split_once(", expected one of ") else {
        return message.to_string();
    };
    let kept: Vec<&str> = (list.split(", "))
        .filter(|name| !names.contains(&name.trim_matches('`')))
        .collect();
    format!("{head}, expected one of {}", kept.join(", "))
}

/// Checks a list of step specs (enqueue request bodies) and returns them as compact JSON.
/// `field` names the list in errors (`steps`, `follow_up`); each step is checked exactly as
/// `POST /v1/jobs` checks a job, so a chain never stalls on a step that could not be enqueued.
/// Follow-ups come after steps whose names are in D1: their `inputs` are not checked here.
pub fn validate_steps(field: &str, steps: &Value, now_ms: i64) -> Result<Vec<Value>, ApiError> {
    checked_steps(field, steps, now_ms, None)
}

/// The steps a job carries, after the job named `first`: each step's `inputs` name it or a
/// step before.
fn steps_after(
    field: &str,
    steps: &Value,
    now_ms: i64,
    first: Option<&str>,
) -> Result<Vec<Value>, ApiError> {
    checked_steps(field, steps, now_ms, Some(first))
}

/// [`validate_steps`]; `first`, when known, is the name of the job before the steps (`None`
/// inside: it has none). Names are distinct within the list and from `first`.
fn checked_steps(
    field: &str,
    steps: &Value,
    now_ms: i64,
    first: Option<Option<&str>>,
) -> Result<Vec<Value>, ApiError> {
    let Some(list) = steps.as_array() else {
        return Err(invalid(
            "invalid_field",
            field,
            "must be an array of job specs",
        ));
    };
    if list.is_empty() || list.len() > MAX_STEPS {
        let message = format!("must hold 1 to {MAX_STEPS} steps");
        return Err(invalid("invalid_field", field, message));
    }
    let mut names: Vec<&str> = first.flatten().into_iter().collect();
    list.iter()
        .enumerate()
        .map(|(i, step)| {
            let at = || format!("{field}[{i}]");
            let earlier = match first {
                Some(_) => Earlier::Named(&names),
                None => Earlier::Unknown,
            };
            checked_spec(at, "step", step, &[], now_ms, earlier)?;
            if let Some(name) = step.get("name").and_then(Value::as_str) {
                if names.contains(&name) {
                    let message = format!("another step of this chain is named \"{name}\"");
                    let e = invalid("duplicate_name", join(&at(), "name"), message);
                    return Err(e);
                }
                names.push(name);
            }
            Ok(step.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_700_000_000_000; // 2023-11-14T22:13:20Z
    const LIMIT: QueueDelayLimit = QueueDelayLimit::DEFAULT;

    #[test]
    fn steps_are_checked_like_jobs_and_name_the_field() {
        let ok = json!([{"type": "noop"}, {"type": "http", "payload": {"url": "https://a.io"}}]);
        assert_eq!(validate_steps("steps", &ok, NOW).unwrap().len(), 2);
        let bad = json!([{"type": "noop"}, {"type": "http", "payload": {"url": "nope"}}]);
        let e = validate_steps("steps", &bad, NOW).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("steps[1].payload.url"));
        let e =
            validate_steps("steps", &json!([{"type": "noop", "dedup_key": "x"}]), NOW).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            ("unknown_field", Some("steps[0].dedup_key"))
        );
        // A step may sleep until a time: due then, or when the step before it ends if later.
        let until = json!([{"type": "noop", "run_at": "2023-11-15T00:00:00Z"}]);
        assert!(validate_steps("steps", &until, NOW).is_ok());
        let e = validate_steps("steps", &json!([{"type": "noop", "foo": 1}]), NOW).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("steps[0].foo"));
        assert!(e.message.contains("`payload`"), "{}", e.message);
        assert!(
            STEP_FORBIDDEN
                .iter()
                .all(|f| !e.message.contains(&format!("`{f}`"))),
            "{}",
            e.message
        );
        let e = validate_steps("follow_up", &json!([{"type": "nah"}]), NOW).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("follow_up[0].type"));
        for empty in [json!([]), json!({}), json!([1])] {
            assert!(validate_steps("steps", &empty, NOW).is_err(), "{empty}");
        }
        let many = Value::Array(vec![json!({"type": "noop"}); MAX_STEPS + 1]);
        assert!(validate_steps("steps", &many, NOW).is_err());
    }

    fn accept(body: Value) -> NewJob {
        validate_enqueue(&body, "id-1".to_string(), NOW, LIMIT).expect("accepted")
    }

    fn reject(body: Value) -> (u16, &'static str, Option<String>) {
        let e = validate_enqueue(&body, "id-1".to_string(), NOW, LIMIT).expect_err("rejected");
        (e.status, e.code, e.field)
    }

    #[test]
    fn minimal_job_takes_the_type_defaults() {
        let job = accept(json!({"type": "rss_feed_refresh"}));
        assert_eq!(
            job,
            NewJob {
                id: "id-1".to_string(),
                job_type: JobType::RSS_FEED_REFRESH,
                family: Family::Default,
                payload: "{}".to_string(),
                priority: 0,
                dedup_key: None,
                max_attempts: 5,
                retry_policy: None,
                flow_key: None,
                flow_limits: None,
                dedup_until_ms: None,
                debounce_ms: None,
                run_at_ms: NOW,
                expires_at_ms: None,
                delivery: DeliveryPlan::Send { delay_secs: 0 },
                steps: None,
                name: None,
                inputs: None,
                callback: None,
            }
        );
    }

    #[test]
    fn a_callback_is_a_target_on_the_job_that_comes_first_and_its_type_is_not_enqueued() {
        let job = accept(json!({"type": "noop", "callback": {"service": "APP", "path": "/done"}}));
        assert_eq!(
            job.callback.as_deref(),
            Some(r#"{"path":"/done","service":"APP"}"#)
        );
        let f = |s: &str| Some(s.to_string());
        let bad = json!({"type": "noop", "callback": {"url": "mailto:x"}});
        assert_eq!(reject(bad), (422, "invalid_field", f("callback.url")));
        let step = json!({"type": "noop", "steps": [{"type": "noop", "callback": {"url": "https://a.io"}}]});
        assert_eq!(reject(step), (422, "unknown_field", f("steps[0].callback")));
        let written_by_d1 =
            json!({"type": "callback", "payload": {"target": {"url": "https://a.io"}}});
        assert_eq!(reject(written_by_d1), (422, "unknown_type", f("type")));
    }

    #[test]
    fn a_wait_is_a_step_due_at_its_timeout() {
        assert_eq!(
            crate::job::workflow_wait::MAX_TIMEOUT_SECS,
            MAX_SCHEDULE_AHEAD_SECS
        );
        let chain = |wait: Value| json!({"type": "noop", "steps": [wait]});
        let wait = json!({"type": "wait", "payload": {"event": "approved", "key": "k", "timeout_seconds": 60}});
        let steps = validate_steps("steps", chain(wait.clone()).get("steps").unwrap(), NOW);
        assert!(steps.is_ok());
        let next = validate_next_step(&wait, "w".into(), NOW, LIMIT).unwrap();
        assert_eq!(next.run_at_ms, NOW + 60_000);
        let f = |s: &str| Some(s.to_string());
        let first = json!({"type": "wait", "payload": {"event": "approved", "key": "k"}});
        assert_eq!(reject(first), (422, "invalid_field", f("type")));
        let delayed = chain(
            json!({"type": "wait", "delay_seconds": 5, "payload": {"event": "e", "key": "k"}}),
        );
        assert_eq!(
            reject(delayed),
            (422, "invalid_field", f("steps[0].delay_seconds"))
        );
        let no_key = chain(json!({"type": "wait", "payload": {"event": "e"}}));
        assert_eq!(
            reject(no_key),
            (422, "invalid_payload", f("steps[0].payload.key"))
        );
    }

    #[test]
    fn a_group_is_a_step_whose_branches_are_checked_as_steps() {
        let group = |payload: Value| json!({"type": "noop", "name": "list", "steps": [{"type": "group", "inputs": ["list"], "payload": payload}]});
        let each =
            json!({"for_each": "body.items", "job": {"type": "noop"}, "on_failure": "continue"});
        assert!(accept(group(each)).steps.is_some());
        let f = |s: &str| Some(s.to_string());
        let bad_branch = json!({"jobs": [{"type": "noop"}, {"type": "http", "payload": {}}]});
        assert_eq!(
            reject(group(bad_branch)),
            (
                422,
                "invalid_payload",
                f("steps[0].payload.jobs[1].payload.url")
            )
        );
        let named = json!({"for_each": "items", "job": {"type": "noop", "name": "x"}});
        assert_eq!(
            reject(group(named)),
            (422, "unknown_field", f("steps[0].payload.job.name"))
        );
        let getting = json!({"for_each": "items", "job": {"type": "http",
            "payload": {"url": "https://a.io", "method": "GET"}}});
        assert_eq!(
            reject(group(getting)),
            (
                422,
                "invalid_payload",
                f("steps[0].payload.job.payload.method")
            )
        );
        let nested = json!({"jobs": [{"type": "group", "payload": {"jobs": [{"type": "noop"}]}}]});
        assert_eq!(
            reject(group(nested)),
            (422, "invalid_field", f("steps[0].payload.jobs[0].type"))
        );
        let first = json!({"type": "group", "payload": {"jobs": [{"type": "noop"}]}});
        assert_eq!(reject(first), (422, "invalid_field", f("type")));
        let delayed = json!({"type": "noop", "steps": [
            {"type": "group", "delay_seconds": 5, "payload": {"jobs": [{"type": "noop"}]}}]});
        assert_eq!(
            reject(delayed),
            (422, "invalid_field", f("steps[0].delay_seconds"))
        );
    }

    #[test]
    fn a_step_takes_inputs_from_named_steps_before_it() {
        let chain = json!({"type": "noop", "name": "fetch", "steps": [
            {"type": "noop", "name": "count", "inputs": ["fetch"]},
            {"type": "noop", "inputs": ["count", "fetch"]}]});
        assert_eq!(accept(chain).name.as_deref(), Some("fetch"));
        let later = json!({"type": "noop", "steps": [
            {"type": "noop", "inputs": ["sum"]}, {"type": "noop", "name": "sum"}]});
        assert_eq!(
            reject(later),
            (422, "unknown_step", Some("steps[0].inputs[0]".to_string()))
        );
        let twice = json!({"type": "noop", "name": "a", "steps": [{"type": "noop", "name": "a"}]});
        assert_eq!(
            reject(twice),
            (422, "duplicate_name", Some("steps[0].name".to_string()))
        );
        let alone = json!({"type": "noop", "inputs": ["fetch"]});
        assert_eq!(
            reject(alone),
            (422, "invalid_field", Some("inputs".to_string()))
        );
        // A follow-up's earlier steps are in D1: its inputs are checked there.
        let follow_up = json!([{"type": "noop", "inputs": ["fetch"]}]);
        assert!(validate_steps("follow_up", &follow_up, NOW).is_ok());
        let text = json!({"type": "noop", "name": "fetch", "steps": [{"type": "http",
            "inputs": ["fetch"], "payload": {"url": "https://a.io", "body": "plain"}}]});
        assert_eq!(
            reject(text),
            (
                422,
                "invalid_payload",
                Some("steps[0].payload.body".to_string())
            )
        );
        let step = json!({"type": "noop", "inputs": ["fetch"]});
        let next = validate_next_step(&step, "i".into(), NOW, LIMIT).unwrap();
        assert_eq!(next.inputs.as_deref(), Some(r#"["fetch"]"#));
    }

    #[test]
    fn steps_are_kept_compact_and_checked() {
        let job = accept(json!({"type": "noop", "steps": [{"type": "noop", "priority": 3}]}));
        assert_eq!(
            job.steps.as_deref(),
            Some(r#"[{"priority":3,"type":"noop"}]"#)
        );
        let bad = json!({"type": "noop", "steps": [{"type": "noop", "priority": 300}]});
        assert_eq!(
            reject(bad),
            (422, "out_of_range", Some("steps[0].priority".to_string()))
        );
    }

    #[test]
    fn full_job() {
        let job = accept(json!({
            "type": "screenshot_capture",
            "payload": {"url": "https://example.com", "viewport": {"width": 800, "height": 600}},
            "priority": 100,
            "delay_seconds": 90,
            "dedup_key": "site-42",
            "max_attempts": 2
        }));
        assert_eq!(job.family, Family::Screenshot);
        assert!(!job.payload.contains(' '), "compact: {}", job.payload);
        assert_eq!(
            serde_json::from_str::<Value>(&job.payload).unwrap(),
            json!({"url": "https://example.com", "viewport": {"width": 800, "height": 600}})
        );
        assert_eq!((job.priority, job.max_attempts), (100, 2));
        assert_eq!(job.dedup_key.as_deref(), Some("site-42"));
        assert_eq!(job.run_at_ms, NOW + 90_000);
        assert_eq!(job.delivery, DeliveryPlan::Send { delay_secs: 90 });
    }

    #[test]
    fn run_at_schedules_sends_or_holds() {
        let soon = accept(json!({"type": "noop", "run_at": "2023-11-14T22:13:21.5Z"}));
        assert_eq!(soon.run_at_ms, NOW + 1_500);
        assert_eq!(soon.delivery, DeliveryPlan::Send { delay_secs: 2 });

        let past = accept(json!({"type": "noop", "run_at": "2020-01-01T00:00:00Z"}));
        assert_eq!(past.run_at_ms, NOW);
        assert_eq!(past.delivery, DeliveryPlan::Send { delay_secs: 0 });

        let tomorrow = accept(json!({"type": "noop", "run_at": "2023-11-15T22:13:20+00:00"}));
        assert_eq!(tomorrow.run_at_ms, NOW + 86_400_000);
        assert_eq!(
            tomorrow.delivery,
            DeliveryPlan::SendLater {
                until_ms: NOW + 86_400_000
            }
        );

        let limit = i64::from(LIMIT.secs());
        let edge = accept(json!({"type": "noop", "delay_seconds": limit}));
        assert_eq!(
            edge.delivery,
            DeliveryPlan::Send {
                delay_secs: limit as u32
            }
        );
        let held = accept(json!({"type": "noop", "delay_seconds": limit + 1}));
        assert_eq!(
            held.delivery,
            DeliveryPlan::SendLater {
                until_ms: NOW + (limit + 1) * 1000
            }
        );
        let (minute, _) = QueueDelayLimit::from_vars(|_| Some("60".into()));
        let body = json!({"type": "noop", "delay_seconds": 120});
        let held = validate_enqueue(&body, "id-1".into(), NOW, minute).unwrap();
        assert_eq!(
            held.delivery,
            DeliveryPlan::SendLater {
                until_ms: NOW + 120_000
            }
        );
        let year = accept(json!({"type": "noop", "delay_seconds": 31_536_000}));
        assert_eq!(year.run_at_ms, NOW + 31_536_000_000);
    }

    #[test]
    fn error_paths() {
        let f = |s: &str| Some(s.to_string());
        let big = "x".repeat(MAX_PAYLOAD_BYTES);
        let cases = [
            (json!([]), (400, "invalid_body", None)),
            (json!("job"), (400, "invalid_body", None)),
            (json!({}), (422, "invalid_field", f("type"))),
            (json!({"type": 5}), (422, "invalid_field", f("type"))),
            (json!({"type": "nope"}), (422, "unknown_type", f("type"))),
            (
                json!({"type": "noop", "extra": 1}),
                (422, "unknown_field", f("extra")),
            ),
            (
                json!({"type": "noop", "priority": "high"}),
                (422, "invalid_field", f("priority")),
            ),
            (
                json!({"type": "noop", "priority": 1.5}),
                (422, "invalid_field", f("priority")),
            ),
            (
                json!({"type": "noop", "priority": -1}),
                (422, "out_of_range", f("priority")),
            ),
            (
                json!({"type": "noop", "priority": 101}),
                (422, "out_of_range", f("priority")),
            ),
            (
                json!({"type": "noop", "payload": [1]}),
                (422, "invalid_payload", f("payload")),
            ),
            (
                json!({"type": "noop", "payload": null}),
                (422, "invalid_payload", f("payload")),
            ),
            (
                json!({"type": "http", "payload": {}}),
                (422, "invalid_payload", f("payload.url")),
            ),
            (
                json!({"type": "http", "payload": {"url": "https://a.io", "headers": {"x-foo": 1}}}),
                (422, "invalid_payload", f("payload.headers.x-foo")),
            ),
            (
                json!({"type": "screenshot_capture", "payload": {"url": "https://a.io", "viewport": {"width": 0, "height": 1}}}),
                (422, "invalid_payload", f("payload.viewport.width")),
            ),
            (
                json!({"type": "http", "payload": {"url": "https://a.io", "body": big}}),
                (413, "payload_too_large", f("payload")),
            ),
            (
                json!({"type": "noop", "delay_seconds": -1}),
                (422, "out_of_range", f("delay_seconds")),
            ),
            (
                json!({"type": "noop", "delay_seconds": 31_536_001}),
                (422, "out_of_range", f("delay_seconds")),
            ),
            (
                json!({"type": "noop", "delay_seconds": "5"}),
                (422, "invalid_field", f("delay_seconds")),
            ),
            (
                json!({"type": "noop", "run_at": "tomorrow"}),
                (422, "invalid_field", f("run_at")),
            ),
            (
                json!({"type": "noop", "run_at": 1700000000}),
                (422, "invalid_field", f("run_at")),
            ),
            (
                json!({"type": "noop", "run_at": "2024-11-14T22:13:21Z"}),
                (422, "out_of_range", f("run_at")),
            ),
            (
                json!({"type": "noop", "delay_seconds": 5, "run_at": "2023-11-14T22:13:21Z"}),
                (422, "conflicting_fields", f("run_at")),
            ),
            (
                json!({"type": "noop", "dedup_key": ""}),
                (422, "invalid_field", f("dedup_key")),
            ),
            (
                json!({"type": "noop", "dedup_key": "k".repeat(257)}),
                (422, "invalid_field", f("dedup_key")),
            ),
            (
                json!({"type": "noop", "dedup_key": 7}),
                (422, "invalid_field", f("dedup_key")),
            ),
            (
                json!({"type": "noop", "max_attempts": 0}),
                (422, "out_of_range", f("max_attempts")),
            ),
            (
                json!({"type": "noop", "max_attempts": 101}),
                (422, "out_of_range", f("max_attempts")),
            ),
        ];
        for (body, expected) in cases {
            let shown = body.to_string();
            let shown = &shown[..shown.len().min(120)];
            assert_eq!(reject(body), expected, "{shown}");
        }
    }

    #[test]
    fn a_job_brings_its_own_flow_limits_with_a_key() {
        let job = accept(json!({"type": "http", "payload": {"url": "https://a.io"},
            "flow_key": "api.a.io", "flow_limits": {"rate": {"limit": 5, "period_secs": 1}}}));
        assert_eq!(job.flow_key.as_deref(), Some("api.a.io"));
        let stored: Limits = serde_json::from_str(job.flow_limits.as_deref().unwrap()).unwrap();
        assert_eq!(
            (stored.concurrency, stored.rate.unwrap().period_ms),
            (None, 1_000)
        );
        let field = |body: Value| reject(body).2.unwrap_or_default();
        let noop = |extra: Value| {
            let mut body = json!({"type": "noop"});
            body.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            body
        };
        let two = json!({"concurrency": 2});
        assert_eq!(field(noop(json!({"flow_limits": two}))), "flow_key");
        assert_eq!(field(noop(json!({"flow_key": "k"}))), "flow_key");
        let none = json!({"flow_key": "k", "flow_limits": {}});
        assert_eq!(field(noop(none)), "flow_limits");
        let zero = json!({"flow_key": "k", "flow_limits": {"concurrency": 0}});
        assert_eq!(field(noop(zero)), "flow_limits.concurrency");
        let stray = json!({"flow_key": "k", "flow_limits": {"concurrency": 1, "key": "x"}});
        assert_eq!(field(noop(stray)), "flow_limits.key");
        let step = json!({"steps": [{"type": "noop", "flow_limits": two}]});
        assert_eq!(field(noop(step)), "steps[0].flow_limits");
        assert_eq!(accept(noop(json!({}))).flow_limits, None);
    }

    #[test]
    fn retry_is_stored_and_a_preset_brings_its_attempts() {
        let quick =
            accept(json!({"type": "http", "payload": {"url": "https://a.io"}, "retry": "quick"}));
        assert_eq!(quick.max_attempts, 3);
        let stored = quick.retry_policy.as_deref().expect("stored");
        let policy = JobRetry::from_stored(stored).expect("readable");
        assert_eq!(
            (1..=3)
                .map(|n| policy.delay_secs(n, 0.3))
                .collect::<Vec<_>>(),
            [2, 4, 8]
        );
        let own = accept(json!({"type": "noop", "retry": "quick", "max_attempts": 7}));
        assert_eq!(own.max_attempts, 7);
        let fixed = accept(json!({"type": "noop", "retry": {"policy": "fixed", "table": [5, 7]}}));
        assert_eq!(
            fixed.retry_policy.as_deref(),
            Some(r#"{"policy":"fixed","table":[5,7]}"#)
        );
        assert_eq!(fixed.max_attempts, 5, "the type's attempts");
        assert_eq!(
            reject(json!({"type": "noop", "retry": {"policy": "fixed", "table": []}})),
            (422, "out_of_range", Some("retry.table".to_string()))
        );
        let step = json!({"type": "noop", "steps": [{"type": "noop", "retry": "fast"}]});
        assert_eq!(
            reject(step),
            (422, "invalid_field", Some("steps[0].retry".to_string()))
        );
    }

    #[test]
    fn expiry_is_after_the_due_time_and_bounded() {
        let f = |s: &str| Some(s.to_string());
        let soon = accept(json!({"type": "noop", "expires_in_seconds": 60}));
        assert_eq!(soon.expires_at_ms, Some(NOW + 60_000));
        let at = accept(
            json!({"type": "noop", "delay_seconds": 10, "expires_at": "2023-11-14T22:14:20Z"}),
        );
        assert_eq!(at.expires_at_ms, Some(NOW + 60_000));
        let cases = [
            (
                json!({"type": "noop", "expires_in_seconds": 0}),
                f("expires_in_seconds"),
            ),
            (
                json!({"type": "noop", "delay_seconds": 60, "expires_in_seconds": 60}),
                f("expires_in_seconds"),
            ),
            (
                json!({"type": "noop", "expires_at": "2023-11-14T22:13:20Z"}),
                f("expires_at"),
            ),
            (
                json!({"type": "noop", "run_at": "2023-11-14T23:00:00Z", "expires_at": "2023-11-14T22:59:00Z"}),
                f("expires_at"),
            ),
            (
                json!({"type": "noop", "expires_at": "2025-11-14T22:13:20Z"}),
                f("expires_at"),
            ),
        ];
        for (body, field) in cases {
            assert_eq!(reject(body.clone()), (422, "out_of_range", field), "{body}");
        }
        assert_eq!(
            reject(json!({"type": "noop", "expires_at": "soon"})),
            (422, "invalid_field", f("expires_at"))
        );
        assert_eq!(
            reject(
                json!({"type": "noop", "expires_at": "2023-11-14T23:00:00Z", "expires_in_seconds": 5})
            ),
            (422, "conflicting_fields", f("expires_at"))
        );
        let year = accept(
            json!({"type": "noop", "delay_seconds": 10, "expires_in_seconds": 10 + MAX_EXPIRES_AFTER_SECS}),
        );
        assert!(year.expires_at_ms.is_some());
        let steps = json!({"type": "noop", "steps": [{"type": "noop", "expires_in_seconds": 30}]});
        assert!(accept(steps).steps.is_some());
        let absolute = json!({"type": "noop", "steps": [{"type": "noop", "expires_at": "2023-11-14T23:00:00Z"}]});
        assert_eq!(
            reject(absolute),
            (422, "unknown_field", f("steps[0].expires_at"))
        );
    }

    #[test]
    fn boundaries_are_accepted() {
        let run_at = crate::util::time_fmt::rfc3339(NOW + MAX_SCHEDULE_AHEAD_SECS * 1000);
        let job =
            accept(json!({"type": "noop", "run_at": run_at, "priority": 0, "max_attempts": 100}));
        assert_eq!(job.max_attempts, 100);
        let key = "k".repeat(256);
        assert_eq!(
            accept(json!({"type": "noop", "dedup_key": key}))
                .dedup_key
                .map(|k| k.len()),
            Some(256)
        );
        let unicode = "é".repeat(256);
        assert!(accept(json!({"type": "noop", "dedup_key": unicode}))
            .dedup_key
            .is_some());
    }

    #[test]
    fn error_messages_are_helpful() {
        let e = validate_enqueue(&json!({"type": "nope"}), "i".into(), NOW, LIMIT).unwrap_err();
        assert_eq!(e.message, "unknown job type \"nope\"");
        let e = validate_enqueue(
            &json!({"type": "noop", "priority": 101}),
            "i".into(),
            NOW,
            LIMIT,
        )
        .unwrap_err();
        assert_eq!(e.message, "must be between 0 and 100");
        assert_eq!(
            e.body(),
            json!({"error": {"code": "out_of_range", "message": "must be between 0 and 100", "field": "priority"}})
        );
    }

    fn counter() -> impl FnMut() -> String {
        let mut n = 0;
        move || {
            n += 1;
            format!("id-{n}")
        }
    }

    fn reject_batch(body: Value) -> (u16, &'static str, Option<String>) {
        let e = validate_batch(&body, counter(), NOW, LIMIT).expect_err("rejected");
        (e.status, e.code, e.field)
    }

    #[test]
    fn batch_accepts_all_in_order() {
        let body = json!({"jobs": [{"type": "noop"}, {"type": "http", "payload": {"url": "https://a.io"}}]});
        let jobs = validate_batch(&body, counter(), NOW, LIMIT).unwrap();
        let summary: Vec<_> = jobs.iter().map(|j| (j.id.as_str(), j.job_type)).collect();
        assert_eq!(summary, [("id-1", JobType::NOOP), ("id-2", JobType::HTTP)]);
    }

    #[test]
    fn batch_error_paths() {
        let f = |s: &str| Some(s.to_string());
        let many: Vec<_> = (0..=MAX_BATCH).map(|_| json!({"type": "noop"})).collect();
        let cases = [
            (json!([]), (400, "invalid_body", None)),
            (json!({}), (422, "invalid_field", f("jobs"))),
            (json!({"jobs": {}}), (422, "invalid_field", f("jobs"))),
            (json!({"jobs": []}), (422, "invalid_field", f("jobs"))),
            (json!({"jobs": many}), (422, "batch_too_large", f("jobs"))),
            (json!({"jobs": [], "x": 1}), (422, "unknown_field", f("x"))),
            (
                json!({"jobs": [{"type": "noop"}, 3]}),
                (422, "invalid_field", f("jobs[1]")),
            ),
            (
                json!({"jobs": [{"payload": {}}]}),
                (422, "invalid_field", f("jobs[0].type")),
            ),
            (
                json!({"jobs": [{"type": "x"}]}),
                (422, "unknown_type", f("jobs[0].type")),
            ),
            (
                json!({"jobs": [{"type": "noop"}, {"type": "noop"}, {"type": "noop"}, {"type": "http", "payload": {"url": "ftp://a"}}]}),
                (422, "invalid_payload", f("jobs[3].payload.url")),
            ),
            (
                json!({"jobs": [{"type": "noop", "payload": 1}]}),
                (422, "invalid_payload", f("jobs[0].payload")),
            ),
        ];
        for (body, expected) in cases {
            let shown = body.to_string();
            let shown = &shown[..shown.len().min(120)];
            assert_eq!(reject_batch(body), expected, "{shown}");
        }
    }

    #[test]
    fn batch_of_exactly_the_limit_is_accepted() {
        let jobs: Vec<_> = (0..MAX_BATCH).map(|_| json!({"type": "noop"})).collect();
        let accepted = validate_batch(&json!({ "jobs": jobs }), counter(), NOW, LIMIT).unwrap();
        assert_eq!(accepted.len(), MAX_BATCH);
        assert_eq!(accepted[99].id, "id-100");
    }

    #[test]
    fn stored_size_is_bounded() {
        assert_eq!(check_stored_size(MAX_STORED_BYTES, "jobs"), Ok(()));
        let e = check_stored_size(MAX_STORED_BYTES + 1, "jobs").unwrap_err();
        assert_eq!((e.status, e.code), (413, "stored_too_large"));
        assert_eq!(e.field.as_deref(), Some("jobs"));
        assert!(e.message.contains("1900000"), "{}", e.message);
    }
}
