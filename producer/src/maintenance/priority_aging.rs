//! Priority aging: a job waiting more than an hour past its due time gains +10
//! priority every 5 minutes, up to 100 (`aged_at` keeps the pace however often ticks run).
//! Queues are FIFO, so priority alone cannot overtake a backlog: a job waiting in a lower
//! family whose priority reaches the next family's threshold (`Family::admit_priority`) is
//! moved there and sent to that queue. Its old message is then stale; the consumer acks it as
//! superseded because a claim must come from the job's current family. A job whose priority
//! reaches `EXPRESS_PRIORITY` in its family is sent to the family's express lane; its message in
//! the normal lane then finds it claimed or done. A job a pause covers,
//! or holds, is never promoted: a new family would take it out of its pause (it still gains
//! priority, and moves once resumed).

use std::collections::HashSet;

use jobs_shared::job::family::Family;
use jobs_shared::schedule::sweep_policy::AGING_STEP;
use jobs_store::jobs::{job_age_priority, job_promote, Aged, Promotion, Unsent};
use serde_json::{json, Value};

use super::job_sender;
use super::tick::Tick;

pub async fn run(tick: &Tick<'_>) -> worker::Result<Value> {
    let (now, batch) = (tick.now_ms, tick.config.batch);
    let mut statements = vec![job_age_priority(tick.db, now, batch)?];
    // Highest target first, so a job climbs at most one family per tick.
    let mut steps: Vec<Promotion> = Family::ALL
        .into_iter()
        .filter_map(|from| {
            from.promotion().map(|(to, threshold)| Promotion {
                from,
                to,
                threshold,
            })
        })
        .collect();
    steps.sort_by_key(|step| step.to.priority());
    for step in steps {
        statements.push(job_promote(tick.db, step, now, batch)?);
    }
    let results = tick.db.batch(statements).await?;
    let aged: Vec<Aged> = results[0].results()?;
    let mut promoted: Vec<Unsent> = Vec::new();
    for result in &results[1..] {
        promoted.extend(result.results::<Unsent>()?);
    }
    let promoted_count = promoted.len();
    let moved: HashSet<&str> = promoted.iter().map(|p| p.id.as_str()).collect();
    let express: Vec<Unsent> = aged
        .iter()
        .filter(|a| a.held_at.is_none() && !moved.contains(a.id.as_str()))
        .filter(|a| {
            let priority = a.priority;
            Family::parse(&a.family)
                .is_some_and(|f| f.enters_express(priority - AGING_STEP, priority))
        })
        .map(Aged::unsent)
        .collect();
    let expressed = express.len();
    promoted.extend(express);
    let sent = job_sender::send(tick, &promoted).await?;
    Ok(json!({
        "raised": aged.len(), "promoted": promoted_count, "expressed": expressed, "sent": sent,
    }))
}
