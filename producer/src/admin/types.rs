//! /v1/admin/types: a team's own job types as data (docs/app-guide.md "Your own job types"):
//! put (create or change), get with its versions, list beside the built-in types, delete, and
//! what its flow control did per key. Each
//! change is one batch with its version and audit rows (jobs_store::job_types), in effect on
//! this isolate at once and on every other within `defined_types::REFRESH_MS`.

use futures::future::join_all;
use jobs_shared::job::flow_control::{limiter_name, FlowCounts};
use jobs_shared::job::job_type::JobType;
use jobs_shared::job::type_definition::TypeDefinition;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::request::field_error::count_param;
use jobs_shared::runtime::js_pattern;
use jobs_shared::util::time_fmt::rfc3339;
use jobs_store::flow_keys;
use jobs_store::job_types::{self, JobTypeRow};
use serde_json::{json, Value};
use worker::{Env, Response};

use super::{d1, Admin};
use crate::request::Request;
use crate::{body, respond};

/// How many of a type's versions its GET shows, newest first.
const VERSIONS: u32 = 20;

/// GET /v1/admin/types: the built-in types, then the defined ones (deleted ones too).
pub async fn list(env: &Env) -> Result<Response, ApiError> {
    let rows = job_types::job_type_list(&d1::database(env)?).await?;
    let types: Vec<Value> = JobType::ALL
        .into_iter()
        .map(built_in)
        .chain(rows.iter().map(defined))
        .collect();
    respond::json(200, &json!({ "types": types }))
}

/// GET /v1/admin/types/{name}, a defined type with its `versions`.
pub async fn get(env: &Env, name: &str) -> Result<Response, ApiError> {
    if let Some(t) = JobType::built_in(name) {
        return respond::json(200, &built_in(t));
    }
    let db = d1::database(env)?;
    let (row, versions) = job_types::job_type_get(&db, name, VERSIONS)
        .await?
        .ok_or_else(|| not_found(name))?;
    let mut view = defined(&row);
    view["versions"] = versions
        .iter()
        .map(|v| {
            json!({
                "version": v.version,
                "definition": v.definition.as_deref().map(parsed),
                "changed_at": rfc3339(v.changed_at),
                "changed_by": v.changed_by,
            })
        })
        .collect();
    respond::json(200, &view)
}

/// PUT /v1/admin/types/{name}: 201 when it creates the type, 200 when it changes it or it
/// already had this definition (`changed: false`, no new version).
pub async fn put(admin: &Admin<'_>, req: &mut Request, name: &str) -> Result<Response, ApiError> {
    let body = body::json(req).await?;
    let definition = TypeDefinition::parse(name, &body, js_pattern::ENGINE)?;
    let entry = admin.entry(
        "type.put",
        json!({ "name": name, "family": definition.family().as_str() }),
    );
    let db = d1::database(admin.env)?;
    let put = job_types::job_type_put(&db, name, &body.to_string(), &entry).await?;
    let created = put.changed && put.row.version == 1;
    let mut view = defined(&put.row);
    view["changed"] = put.changed.into();
    put.row.install_here();
    respond::json(if created { 201 } else { 200 }, &view)
}

/// DELETE /v1/admin/types/{name}: enqueue refuses it from now on; its jobs already enqueued
/// still run under its last version. Put it again to bring it back.
pub async fn delete(admin: &Admin<'_>, name: &str) -> Result<Response, ApiError> {
    if JobType::built_in(name).is_some() {
        let message = format!("{name} is a built-in type");
        return Err(ApiError::new(409, "built_in_type", message).with_field("name"));
    }
    let entry = admin.entry("type.delete", json!({ "name": name }));
    let db = d1::database(admin.env)?;
    let row = job_types::job_type_delete(&db, name, &entry)
        .await?
        .ok_or_else(|| not_found(name))?;
    let view = defined(&row);
    row.install_here();
    respond::json(200, &view)
}

/// How many keys a type's flow view lists, by default and at most (each read live from its
/// limiter).
const FLOW_KEYS: u32 = 20;
const MAX_FLOW_KEYS: u32 = 50;

/// GET /v1/admin/types/{name}/flow?key&limit: the type's flow control and its keys, most recently
/// seen first: what its limits did (`flow_keys`: started, waited, handed back) and, from each
/// key's limiter, the jobs running and waiting now (null where the limiter did not answer).
pub async fn flow(req: &Request, env: &Env, name: &str) -> Result<Response, ApiError> {
    let t = JobType::parse(name).ok_or_else(|| not_found(name))?;
    let pairs = d1::query_pairs(req);
    let limit = count_param(
        "limit",
        d1::param(&pairs, "limit"),
        FLOW_KEYS,
        MAX_FLOW_KEYS,
    )?;
    let key = d1::param(&pairs, "key");
    // Any type's jobs may bring their own key and limits, so any type may have keys.
    let rows = flow_keys::flow_key_list(&d1::database(env)?, name, key, limit).await?;
    let live = join_all(rows.iter().map(|row| limiter_counts(env, name, &row.key))).await;
    let keys: Vec<Value> = rows
        .iter()
        .zip(live)
        .map(|(row, live)| {
            json!({
                "key": row.key, "started": row.started, "waited": row.waited,
                "handed_back": row.handed_back, "last_at": rfc3339(row.last_at),
                "running": live.map(|c| c.running), "waiting": live.map(|c| c.waiting),
            })
        })
        .collect();
    let spec = t.flow().map(|f| {
        let rate = f.limits.rate.map(|r| json!({ "limit": r.limit, "period_secs": r.period_ms / 1000 }));
        json!({ "key": f.key, "concurrency": f.limits.concurrency, "rate": rate, "throttle_on_429": f.throttle_on_429 })
    });
    respond::json(200, &json!({ "type": name, "flow": spec, "keys": keys }))
}

/// A key's live counts, from its limiter (the consumer's Durable Object, bound here as `FLOW`).
async fn limiter_counts(env: &Env, job_type: &str, key: &str) -> Option<FlowCounts> {
    let name = limiter_name(job_type, key);
    let stub = env
        .durable_object("FLOW")
        .ok()?
        .id_from_name(&name)
        .ok()?
        .get_stub()
        .ok()?;
    let mut response = stub.fetch_with_str("https://flow/").await.ok()?;
    response.json().await.ok()
}

fn built_in(t: JobType) -> Value {
    json!({
        "name": t.as_str(),
        "built_in": true,
        "family": t.family().as_str(),
        "handler": t.handler().module(),
        "max_attempts": t.spec().max_attempts,
        "timeout_ms": t.spec().timeout_ms,
    })
}

fn defined(row: &JobTypeRow) -> Value {
    json!({
        "name": row.name,
        "built_in": false,
        "version": row.version,
        "definition": parsed(&row.definition),
        "updated_at": rfc3339(row.updated_at),
        "updated_by": row.updated_by,
        "deleted_at": row.deleted_at.map(rfc3339),
    })
}

/// A stored definition, which was JSON when it was accepted.
fn parsed(definition: &str) -> Value {
    serde_json::from_str(definition).unwrap_or(Value::Null)
}

fn not_found(name: &str) -> ApiError {
    ApiError::new(404, "not_found", format!("no job type {name}")).with_field("name")
}
