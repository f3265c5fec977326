//! Paging within a tick, for the recovery services (rescue, re-send, send when due, release of held jobs): a backlog of
//! stuck jobs is worked through in pages of `SweepConfig::page` rows while the tick's shared
//! `SweepBudget` allows, instead of one page a minute (docs/operating.md "Recurring jobs and the
//! maintenance sweep").

use std::future::Future;

use jobs_store::jobs::Unsent;
use serde_json::{json, Map, Value};
use worker::D1PreparedStatement;

use super::job_sender;
use super::tick::Tick;
use crate::env_config;

/// What one page did.
pub struct Page {
    /// Rows the page picked (a full page means more may be waiting).
    pub rows: usize,
    /// Every message the page meant to send was accepted; after a failed send the next page
    /// would find the same rows, so paging stops until the next tick.
    pub all_sent: bool,
    /// Its counts (a JSON object of numbers), summed over the pages into the service's
    /// `sweep.completed` entry.
    pub report: Value,
}

/// Runs `page` once, then again while the budget allows; answers the summed counts and
/// `pages`. An error on a later page ends the paging with what was done (and the error).
pub async fn pages<F, Fut>(tick: &Tick<'_>, mut page: F) -> worker::Result<Value>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = worker::Result<Page>>,
{
    let mut totals = Map::new();
    let mut done = 0u32;
    loop {
        let page = match page().await {
            Ok(page) => page,
            Err(e) if done == 0 => return Err(e),
            Err(e) => {
                totals.insert("error".into(), e.to_string().into());
                break;
            }
        };
        done += 1;
        if let Value::Object(counts) = page.report {
            for (name, count) in counts {
                let sum = totals.get(&name).and_then(Value::as_u64).unwrap_or(0);
                totals.insert(name, (sum + count.as_u64().unwrap_or(0)).into());
            }
        }
        let mut budget = tick.budget.get();
        let more = budget.after_page(
            page.rows as u32,
            tick.config.page,
            page.all_sent,
            env_config::now_ms(),
        );
        tick.budget.set(budget);
        if !more {
            break;
        }
    }
    totals.insert("pages".into(), done.into());
    Ok(Value::Object(totals))
}

/// A re-sender's tick: pages of the jobs `select` picks (given the page size) are sent again,
/// and each accepted send recorded. A job whose send failed would be found again, so a page
/// with a failed send ends the paging.
pub async fn resend_pages<F>(tick: &Tick<'_>, select: F) -> worker::Result<Value>
where
    F: Fn(u32) -> worker::Result<D1PreparedStatement>,
{
    pages(tick, || async {
        let found: Vec<Unsent> = select(tick.config.page)?.all().await?.results()?;
        let sent = job_sender::send(tick, &found).await?;
        Ok(Page {
            rows: found.len(),
            all_sent: sent == found.len(),
            report: json!({ "found": found.len(), "sent": sent }),
        })
    })
    .await
}
