//! Escalation of jobs that went dead (seed 000 section 5), run by the sweep rather than the
//! consumer: the consumer's hot path makes no webhook calls (their latency and failures never
//! hold a batch's acks), and one place sees every death whichever path made it (the consumer,
//! the lease rescuer, the DLQ consumer's `delivery_exhausted`). `jobs.escalated_at` is the
//! outbox: NULL on a dead job means not yet escalated, and every write that makes a job dead
//! clears it, so a job that dies again after an operator's retry is escalated again.
//!
//! - high: a PagerDuty `trigger` (dedup key per job and run); default and screenshot: a chat
//!   message with the error and a dashboard link. Each tick claims at most `SWEEP_BATCH` jobs
//!   (compare-and-set on `escalated_at IS NULL`, so overlapping ticks never both send), sends,
//!   and puts back those whose send failed, for the next tick.
//! - low and bulk: one digest a day. The first tick of a UTC day writes the previous day's row
//!   in `escalation_digests` (the claim: a day is sent once), marks the jobs it covers, sends
//!   one message aggregated by type and error class, and undoes both if the send failed.

use futures::future::join_all;
use jobs_shared::observe::escalation::{
    digest_message, pagerduty_job_dead, slack_job_dead, DeadJob, DigestLine, EscalationConfig,
};
use jobs_shared::{rfc3339, sql_name_list, Escalation, Family};
use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use worker::console_error;

use super::{notifier, Tick};
use crate::env_config;
use crate::job_store::num;

const DAY_MS: i64 = 86_400_000;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    let config = EscalationConfig::from_vars(|name| env_config::string(tick.env, name));
    let immediate = immediate(tick, &config).await?;
    let digest = daily_digest(tick, &config).await?;
    Ok(json!({ "immediate": immediate, "digest": digest }))
}

/// `'high', 'default', ...`: the families whose deaths are escalated one by one, or digested.
fn families_sql(digest: bool) -> String {
    sql_name_list(
        Family::ALL
            .into_iter()
            .filter(|f| (f.escalation() == Escalation::Digest) == digest)
            .map(Family::as_str),
    )
}

async fn immediate(tick: &Tick<'_>, config: &EscalationConfig) -> worker::Result<Value> {
    let families = families_sql(false);
    let claimed: Vec<DeadJob> = tick
        .db
        .prepare(format!(
            "UPDATE jobs SET escalated_at = ?1 WHERE id IN (SELECT id FROM jobs \
             WHERE status = 'dead' AND escalated_at IS NULL AND family IN ({families}) \
             ORDER BY finished_at LIMIT ?2) AND status = 'dead' AND escalated_at IS NULL \
             RETURNING id, type, family, attempts, max_attempts, runs, error_class, last_error, \
             correlation_id"
        ))
        .bind(&[num(tick.now_ms), num(tick.config.batch.into())])?
        .all()
        .await?
        .results()?;
    if claimed.is_empty() {
        return Ok(json!({ "claimed": 0 }));
    }
    let results = join_all(claimed.iter().map(|job| async move {
        let link = config.job_link(&job.id);
        let escalation = Family::parse(&job.family).map_or(Escalation::Chat, Family::escalation);
        let page = |key: &str| pagerduty_job_dead(key, job, link.as_deref());
        let chat = || slack_job_dead(job, link.as_deref());
        notifier::deliver(config, escalation, page, chat).await
    }))
    .await;
    let mut failed = Vec::new();
    let mut sent = 0;
    for (job, result) in claimed.iter().zip(results) {
        match result {
            Ok(true) => sent += 1,
            // No channel configured: nothing to send, and nothing left to do later.
            Ok(false) => {}
            Err(e) => {
                console_error!(
                    "escalation of dead job {} failed, retried next tick: {e}",
                    job.id
                );
                failed.push(job.id.as_str());
            }
        }
    }
    if !failed.is_empty() {
        let ids = JsValue::from_str(&serde_json::to_string(&failed).unwrap_or_default());
        tick.db
            .prepare(
                "UPDATE jobs SET escalated_at = NULL WHERE id IN (SELECT value FROM json_each(?1)) \
                 AND +status = 'dead' AND escalated_at = ?2",
            )
            .bind(&[ids, num(tick.now_ms)])?
            .run()
            .await?;
    }
    Ok(json!({ "claimed": claimed.len(), "sent": sent, "failed": failed.len() }))
}

async fn daily_digest(tick: &Tick<'_>, config: &EscalationConfig) -> worker::Result<Value> {
    let today_start = tick.now_ms - tick.now_ms.rem_euclid(DAY_MS);
    let day = rfc3339(today_start - DAY_MS)[..10].to_string();
    let done: Vec<Value> = tick
        .db
        .prepare("SELECT day FROM escalation_digests WHERE day = ?1")
        .bind(&[JsValue::from_str(&day)])?
        .all()
        .await?
        .results()?;
    if !done.is_empty() {
        return Ok(Value::Null);
    }
    let families = families_sql(true);
    let pending = format!(
        "status = 'dead' AND escalated_at IS NULL AND family IN ({families}) AND finished_at < ?2"
    );
    let day_value = JsValue::from_str(&day);
    let params = [day_value.clone(), num(today_start), num(tick.now_ms)];
    let lines = tick
        .db
        .prepare(format!(
            "SELECT ?1 AS day, ?3 AS at, family, type, error_class, COUNT(*) AS count, \
             MAX(last_error) AS example FROM jobs WHERE {pending} \
             GROUP BY family, type, error_class ORDER BY count DESC, type"
        ))
        .bind(&params)?;
    // The claim: only the tick whose row this is marks the jobs.
    let claim = tick
        .db
        .prepare(format!(
            "INSERT INTO escalation_digests (day, sent_at, jobs) \
             SELECT ?1, ?3, COUNT(*) FROM jobs WHERE {pending} ON CONFLICT DO NOTHING"
        ))
        .bind(&params)?;
    let mark = tick
        .db
        .prepare(format!(
            "UPDATE jobs SET escalated_at = ?3 WHERE {pending} AND EXISTS \
             (SELECT 1 FROM escalation_digests WHERE day = ?1 AND sent_at = ?3)"
        ))
        .bind(&params)?;
    let owned = tick
        .db
        .prepare("SELECT day FROM escalation_digests WHERE day = ?1 AND sent_at = ?2")
        .bind(&[day_value.clone(), num(tick.now_ms)])?;
    let results = tick.db.batch(vec![lines, claim, mark, owned]).await?;
    let lines: Vec<DigestLine> = results[0].results()?;
    if results[3].results::<Value>()?.is_empty() || lines.is_empty() {
        return Ok(json!({ "day": day, "jobs": 0 }));
    }
    let jobs: i64 = lines.iter().map(|l| l.count).sum();
    let Some(url) = &config.digest_webhook_url else {
        return Ok(json!({ "day": day, "jobs": jobs, "sent": false }));
    };
    let message = digest_message(&day, &lines, config.dashboard_url.as_deref());
    if let Err(e) = notifier::post_json("digest", url, &message).await {
        console_error!("the digest for {day} failed, retried next tick: {e}");
        let undo_jobs = tick
            .db
            .prepare(format!(
                "UPDATE jobs SET escalated_at = NULL WHERE status = 'dead' AND escalated_at = ?1 \
                 AND family IN ({families})"
            ))
            .bind(&[num(tick.now_ms)])?;
        let undo_day = tick
            .db
            .prepare("DELETE FROM escalation_digests WHERE day = ?1 AND sent_at = ?2")
            .bind(&[day_value, num(tick.now_ms)])?;
        tick.db.batch(vec![undo_jobs, undo_day]).await?;
        return Ok(json!({ "day": day, "jobs": jobs, "sent": false, "error": e }));
    }
    Ok(json!({ "day": day, "jobs": jobs, "sent": true }))
}
