//! One queue batch, start to end, as named stages (ARCHITECTURE.md "consumer/: the queue
//! Worker"):
//!
//! 1. [`claim`]: every job of the batch claimed in one D1 round trip (two when a message claims
//!    nothing at first, see `jobs::job_claim`);
//! 2. [`claim_outcome`]: what the claim made of each message (claimed, paused, exhausted,
//!    expired, a duplicate, or nothing);
//! 3. [`execute`]: the claimed jobs run concurrently under a lease [`heartbeat`], each ending
//!    in a [`fate::Fate`] (released unstarted, or run and decided);
//! 4. [`record`]: every outcome recorded, and why the other messages claimed nothing read, in
//!    a second round trip;
//! 5. [`settle`]: each message acked, retried or dead-lettered, and the chains' next steps
//!    sent.
//!
//! A new stage plugs in between two of these in [`run_stages`], taking the one before's output.
//! Every message leaves with an explicit ack or retry. Each stage's future is boxed where it is
//! awaited (`boxed_local`), so that its code is a function of its own rather than part of one
//! batch-wide state machine: V8 compiles a hot WASM function whole, and a stage that did not run
//! (dead letters, the one-by-one record) then costs nothing (docs/performance.md "Benchmark").

pub mod claim;
pub mod claim_outcome;
pub mod context;
pub mod execute;
pub mod fate;
pub mod heartbeat;
pub mod record;
pub mod settle;

use futures::FutureExt;
use jobs_shared::job::family::Family;
use jobs_shared::job::job_type::JobType;
use jobs_shared::job::lease::ConsumerLimits;
use jobs_shared::observe::d1_stats::D1Stats;
use jobs_shared::observe::job_event::Settled;
use jobs_shared::observe::log_line::{fault, LogLevel};
use jobs_shared::runtime::clock::now_ms;
use jobs_shared::runtime::vars;
use jobs_store::job_types;
use worker::Env;

use crate::delivery::Delivery;
use crate::invocation::Invocation;
use crate::job_events::BatchDone;
use crate::{dead_letters, job_events};
use context::BatchContext;

pub async fn run(queue: &str, deliveries: &[Delivery], env: &Env, invocation: &Invocation) {
    let Some((family, is_dlq)) = Family::from_queue_name(queue) else {
        fault(
            LogLevel::Error,
            "batch",
            format_args!("batch from unknown queue {queue}: retried later"),
        );
        deliveries.iter().for_each(|d| d.retry(300));
        return;
    };
    if is_dlq {
        return dead_letters::record(family, deliveries, env)
            .boxed_local()
            .await;
    }
    for delivery in deliveries {
        if let Err(e) = &delivery.message {
            fault(
                LogLevel::Error,
                "batch",
                format_args!("dropping a message on {queue} that is not a job: {e}"),
            );
            delivery.ack();
        }
    }
    let valid: Vec<&Delivery> = deliveries.iter().filter(|d| d.message.is_ok()).collect();
    if valid.is_empty() {
        return;
    }
    let db = match env.d1("DB") {
        Ok(db) => db,
        Err(e) => return settle::d1_failed(&valid, &e),
    };
    // A team's own types (jobs_shared::job::defined_types), read again when the batch has one
    // and this isolate's copy is due, or at once for one the copy lacks (defined since it was
    // read): a batch of built-in types never pays for them.
    fn type_of<'d>(d: &&'d Delivery) -> &'d str {
        d.message.as_ref().map_or("", |m| m.job_type.as_str())
    }
    if valid
        .iter()
        .any(|d| JobType::built_in(type_of(d)).is_none())
    {
        let unknown = valid.iter().any(|d| JobType::parse(type_of(d)).is_none());
        job_types::job_types_refresh(&db, now_ms(), unknown).await;
    }
    let (limits, warnings) = ConsumerLimits::from_vars(|name| vars::string(env, name));
    warnings
        .iter()
        .for_each(|w| fault(LogLevel::Error, "config", w));
    let terms = claim::terms(family, &valid, invocation);
    let ctx = BatchContext {
        db: &db,
        env,
        invocation,
        limits: &limits,
        terms: &terms,
    };
    let started = now_ms();
    let mut stats = D1Stats::default();
    let stages = run_stages(&ctx, &valid, &mut stats).boxed_local();
    let (settled, limiter_calls) = match stages.await {
        Ok(ran) => ran,
        Err(e) => {
            settle::d1_failed(&valid, &e);
            (Settled::default(), 0)
        }
    };
    job_events::batch_completed(&BatchDone {
        queue,
        messages: valid.len(),
        stats: &stats,
        settled: &settled,
        limiter_calls,
        duration_ms: now_ms() - started,
        invocation: &invocation.id,
    });
}

/// The batch's stages, in order, and the calls flow control made to its limiters; `Err` only
/// when the claim itself failed (nothing was run).
async fn run_stages(
    ctx: &BatchContext<'_>,
    valid: &[&Delivery],
    stats: &mut D1Stats,
) -> worker::Result<(Settled, u32)> {
    let (db, terms) = (ctx.db, ctx.terms);
    let family = terms.family;
    let claimed = claim::claim(db, valid, terms, stats).boxed_local().await?;
    let sorted = claim_outcome::sort(family, valid, &claimed);
    let (mut runs, flow) = execute::run_all(ctx, &sorted.runs, stats)
        .boxed_local()
        .await;
    let limiter_calls = flow.iter().map(|t| t.limiter_calls).sum();
    let written = record::Written {
        family,
        claim: &claimed,
        batch_started: terms.started_ms,
        unclaimed: &sorted.unclaimed,
        flow: &flow,
    };
    match record::record(db, &mut runs, &written, stats)
        .boxed_local()
        .await
    {
        Ok(recorded) => {
            let ends = settle::Ends {
                family,
                runs: &runs,
                unclaimed: &sorted.unclaimed,
                seen: &recorded.seen,
                made_due: &recorded.made_due,
                dead: sorted.dead,
            };
            settle::settle(ends, ctx.env).boxed_local().await;
            Ok((recorded.settled, limiter_calls))
        }
        Err(e) => {
            settle::unrecorded(ctx, &runs, &sorted, &e)
                .boxed_local()
                .await;
            Ok((Settled::default(), limiter_calls))
        }
    }
}
