//! Escalation of jobs that went dead (docs/operating.md "Escalation of dead jobs"), run by the
//! sweep rather than the consumer: the consumer's hot path makes no webhook calls (their latency
//! and failures never hold a batch's acks), and one place sees every death whichever path made it
//! (the consumer, the lease rescuer, the DLQ consumer's `delivery_exhausted`). `jobs.escalated_at`
//! is the outbox: NULL on a dead job means not yet escalated, and every write that makes a job dead
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
use jobs_shared::job::family::{Escalation, Family};
use jobs_shared::observe::escalation::{
    digest_message, pagerduty_job_dead, slack_job_dead, DigestLine, EscalationConfig,
};
use jobs_shared::observe::log_line::{fault, LogLevel};
use jobs_shared::util::time_fmt::rfc3339;
use jobs_store::escalation_digests::{
    escalation_digest_delete, escalation_digest_exists, escalation_digest_insert,
    escalation_digest_owned,
};
use jobs_store::jobs::{
    job_claim_escalation, job_list_digest_lines, job_mark_digested, job_unclaim_digest,
    job_unclaim_escalation, Digest,
};
use serde_json::{json, Value};

use super::notifier;
use super::tick::Tick;
use crate::env_config;

const DAY_MS: i64 = 86_400_000;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    let config = EscalationConfig::from_vars(|name| env_config::string(tick.env, name));
    let immediate = immediate(tick, &config).await?;
    let digest = daily_digest(tick, &config).await?;
    Ok(json!({ "immediate": immediate, "digest": digest }))
}

async fn immediate(tick: &Tick<'_>, config: &EscalationConfig) -> worker::Result<Value> {
    let claimed = job_claim_escalation(tick.db, tick.now_ms, tick.config.batch).await?;
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
                let message = format_args!(
                    "escalation of dead job {} failed, retried next tick: {e}",
                    job.id
                );
                fault(LogLevel::Error, "dead_job_escalator", message);
                failed.push(job.id.as_str());
            }
        }
    }
    if !failed.is_empty() {
        job_unclaim_escalation(tick.db, &failed, tick.now_ms).await?;
    }
    Ok(json!({ "claimed": claimed.len(), "sent": sent, "failed": failed.len() }))
}

async fn daily_digest(tick: &Tick<'_>, config: &EscalationConfig) -> worker::Result<Value> {
    let today_start = tick.now_ms - tick.now_ms.rem_euclid(DAY_MS);
    let day = rfc3339(today_start - DAY_MS)[..10].to_string();
    if escalation_digest_exists(tick.db, &day).await? {
        return Ok(Value::Null);
    }
    let digest = Digest {
        day: &day,
        before_ms: today_start,
        at_ms: tick.now_ms,
    };
    // The claim: only the tick whose row this is marks the jobs.
    let statements = vec![
        job_list_digest_lines(tick.db, &digest)?,
        escalation_digest_insert(tick.db, &digest)?,
        job_mark_digested(tick.db, &digest)?,
        escalation_digest_owned(tick.db, &digest)?,
    ];
    let results = tick.db.batch(statements).await?;
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
        let message = format_args!("the digest for {day} failed, retried next tick: {e}");
        fault(LogLevel::Error, "dead_job_escalator", message);
        let undo_jobs = job_unclaim_digest(tick.db, &digest)?;
        let undo_day = escalation_digest_delete(tick.db, &digest)?;
        tick.db.batch(vec![undo_jobs, undo_day]).await?;
        return Ok(json!({ "day": day, "jobs": jobs, "sent": false, "error": e }));
    }
    Ok(json!({ "day": day, "jobs": jobs, "sent": true }))
}
