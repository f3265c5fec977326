//! The maintenance sweep's pure decisions: its configuration (vars with defaults), the budget
//! its recovery services page within, and priority aging.

use crate::job::family::Family;
use crate::util::config_var::int_var;

/// Priority aging: a job waiting over an hour gains +10 priority every 5 minutes, up to
/// [`crate::job::enqueue::MAX_PRIORITY`] (docs/operating.md "Recurring jobs and the maintenance
/// sweep").
pub const AGING_AFTER_MS: i64 = 3_600_000;
pub const AGING_EVERY_MS: i64 = 300_000;
pub const AGING_STEP: i64 = 10;

/// The sweep's knobs. Every one is a var with a default, so none must be set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepConfig {
    /// `OUTBOX_GRACE_SECS`: how long a `queued` job may sit with no send recorded before the
    /// sweep re-sends it. The happy path records none until a consumer claims the job, so
    /// this must exceed the usual time from enqueue to claim.
    pub outbox_grace_ms: i64,
    /// `RETAIN_SUCCEEDED_DAYS`: succeeded, cancelled and skipped jobs (with their runs) are
    /// deleted this long after they finished (default 90 days).
    pub retain_succeeded_ms: i64,
    /// `RETAIN_DEAD_DAYS`: dead jobs are kept longer, for investigation.
    pub retain_dead_ms: i64,
    /// `RETAIN_HISTORY_DAYS`: the charts' per-minute rows (`job_minutes`) are kept this long
    /// (default 7 days: 5 families x 1,440 rows a day).
    pub retain_history_ms: i64,
    /// `SWEEP_BATCH`: rows the other services (schedules, aging, retention, escalation)
    /// handle per tick at most; a backlog takes more ticks.
    pub batch: u32,
    /// `STRANDED_AFTER_SECS`: how long past its due time, and past its last recorded send, a
    /// `queued` or `retrying` job may wait unclaimed before the sweep sends its message again
    /// (the queue dropped it). It must exceed the longest backlog wait one expects: each job
    /// of a deeper backlog gets one harmless duplicate message per this much waiting.
    pub stranded_after_ms: i64,
    /// `SWEEP_PAGE`: rows a recovery service (rescue, re-send, send when due, release of held jobs) handles per page. It
    /// pages on within a tick while pages come back full and the budget lasts.
    pub page: u32,
    /// `SWEEP_BUDGET_SECS`: wall-clock time after which the recovery services start no
    /// further page in a tick.
    pub budget_ms: i64,
    /// `SWEEP_SUBREQUESTS`: D1 statements and queue sends the recovery services may make per
    /// tick beyond their first page each (a Worker invocation may make 1,000).
    pub subrequests: u32,
}

const DAY_MS: i64 = 86_400_000;

impl SweepConfig {
    pub const DEFAULT: SweepConfig = SweepConfig {
        outbox_grace_ms: 300_000,
        retain_succeeded_ms: 90 * DAY_MS,
        retain_dead_ms: 180 * DAY_MS,
        retain_history_ms: 7 * DAY_MS,
        batch: 100,
        stranded_after_ms: 3_600_000,
        page: 1000,
        budget_ms: 20_000,
        subrequests: 500,
    };

    /// Reads the vars through `var`; an unset, blank or unusable value keeps its default and
    /// is reported in the returned warnings (a misconfigured var never stops the sweep).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> (SweepConfig, Vec<String>) {
        let mut warnings = Vec::new();
        let mut read = |name: &str, default: i64, unit_ms: i64, max: i64| -> i64 {
            int_var(name, var(name), max, "the default", &mut warnings)
                .map_or(default, |n| n * unit_ms)
        };
        let d = SweepConfig::DEFAULT;
        let config = SweepConfig {
            outbox_grace_ms: read("OUTBOX_GRACE_SECS", d.outbox_grace_ms, 1000, 86_400),
            retain_succeeded_ms: read("RETAIN_SUCCEEDED_DAYS", d.retain_succeeded_ms, DAY_MS, 3650),
            retain_dead_ms: read("RETAIN_DEAD_DAYS", d.retain_dead_ms, DAY_MS, 3650),
            retain_history_ms: read("RETAIN_HISTORY_DAYS", d.retain_history_ms, DAY_MS, 3650),
            batch: read("SWEEP_BATCH", d.batch.into(), 1, 1000) as u32,
            stranded_after_ms: read("STRANDED_AFTER_SECS", d.stranded_after_ms, 1000, 604_800),
            page: read("SWEEP_PAGE", d.page.into(), 1, 1000) as u32,
            budget_ms: read("SWEEP_BUDGET_SECS", d.budget_ms, 1000, 600),
            subrequests: read("SWEEP_SUBREQUESTS", d.subrequests.into(), 1, 10_000) as u32,
        };
        (config, warnings)
    }
}

/// What the recovery services may still spend in this tick. Each runs one page whatever is
/// left, then another only while its last page came back full with every message sent (after a
/// failed send a page would find the same rows again), the wall clock is before the deadline,
/// and the subrequests left cover the next page's worst case. So a tick ends within about
/// `budget_ms` plus one page, far inside a scheduled Worker's limits (15 min wall clock,
/// 1,000 subrequests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepBudget {
    deadline_ms: i64,
    subrequests: u32,
}

/// What a page costs at most beyond its messages: three D1 statements (select or update,
/// run records, the sends recorded).
const PAGE_D1_STATEMENTS: u32 = 3;

impl SweepBudget {
    /// The budget of a tick that started at `started_ms` (the runtime's clock, not the tick's
    /// scheduled time).
    pub fn new(config: &SweepConfig, started_ms: i64) -> SweepBudget {
        SweepBudget {
            deadline_ms: started_ms + config.budget_ms,
            subrequests: config.subrequests,
        }
    }

    /// The most subrequests a page of `rows` jobs costs: its D1 statements, and one sendBatch
    /// per 100 messages plus one per family (a family's last partial batch), to the job
    /// queues and to the DLQs alike.
    pub fn page_cost(rows: u32) -> u32 {
        let families = Family::ALL.len() as u32;
        PAGE_D1_STATEMENTS + rows.div_ceil(100) + 2 * families
    }

    /// Spends a page that handled `rows` of a full `page` (`all_sent`: every message it meant
    /// to send was accepted) at `now_ms`; whether another page may follow.
    pub fn after_page(&mut self, rows: u32, page: u32, all_sent: bool, now_ms: i64) -> bool {
        self.subrequests = self.subrequests.saturating_sub(Self::page_cost(rows));
        rows >= page
            && all_sent
            && now_ms < self.deadline_ms
            && self.subrequests >= Self::page_cost(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn config_defaults_and_overrides() {
        let (config, warnings) = SweepConfig::from_vars(|_| None);
        assert_eq!(config, SweepConfig::DEFAULT);
        assert!(warnings.is_empty());
        let vars: HashMap<&str, &str> = [
            ("OUTBOX_GRACE_SECS", "60"),
            ("RETAIN_SUCCEEDED_DAYS", "7"),
            ("RETAIN_DEAD_DAYS", "abc"),
            ("SWEEP_BATCH", " "),
            ("STRANDED_AFTER_SECS", "600"),
            ("SWEEP_PAGE", "250"),
            ("SWEEP_BUDGET_SECS", "5"),
            ("SWEEP_SUBREQUESTS", "20000"),
        ]
        .into();
        let (config, warnings) =
            SweepConfig::from_vars(|name| vars.get(name).map(|v| v.to_string()));
        assert_eq!(config.outbox_grace_ms, 60_000);
        assert_eq!(config.retain_succeeded_ms, 7 * DAY_MS);
        assert_eq!(config.retain_dead_ms, SweepConfig::DEFAULT.retain_dead_ms);
        assert_eq!(config.batch, 100);
        assert_eq!(config.stranded_after_ms, 600_000);
        assert_eq!(config.page, 250);
        assert_eq!(config.budget_ms, 5_000);
        assert_eq!(config.subrequests, 500, "over the cap keeps the default");
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].starts_with("RETAIN_DEAD_DAYS"), "{warnings:?}");
        assert!(warnings[1].starts_with("SWEEP_SUBREQUESTS"), "{warnings:?}");
    }

    #[test]
    fn a_page_costs_its_statements_and_sends() {
        assert_eq!(SweepBudget::page_cost(0), 13);
        assert_eq!(SweepBudget::page_cost(1000), 23);
        assert_eq!(SweepBudget::page_cost(1001), 24);
    }

    #[test]
    fn pages_go_on_while_full_sent_and_within_budget() {
        let config = SweepConfig::DEFAULT;
        let start = 1_000_000;
        let fresh = SweepBudget::new(&config, start);
        let next = |rows, all_sent, at| {
            let mut budget = fresh;
            budget.after_page(rows, 1000, all_sent, at)
        };
        assert!(next(1000, true, start + 1));
        assert!(!next(999, true, start + 1), "a short page: done");
        assert!(!next(1000, false, start + 1), "a failed send: next tick");
        assert!(!next(1000, true, start + 20_000), "out of time");

        // 500 subrequests pay for 21 full pages of 1,000 (23 each): 21,000 jobs per tick.
        let mut budget = fresh;
        let pages = 1
            + (0..100)
                .take_while(|_| budget.after_page(1000, 1000, true, start + 1))
                .count();
        assert_eq!(pages, 21);
    }
}
