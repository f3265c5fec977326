//! The operator's API under /v1/admin (admin scope; crate::routes maps each route to its
//! handler here and the router checks the token): stats, job search and detail, job actions
//! and bulk actions, dead letters, pauses, the audit log, schedules, budgets, RSS sources and
//! the charts' history, and the job types teams define.
//! Every change is written together with its audit row.

pub(crate) mod audit;
pub(crate) mod budgets;
pub(crate) mod d1;
pub(crate) mod dead_letters;
pub(crate) mod history;
pub(crate) mod job_actions;
pub(crate) mod jobs;
pub(crate) mod pauses;
pub(crate) mod rss_sources;
pub(crate) mod schedules;
pub(crate) mod stats;
pub(crate) mod types;

use jobs_store::audit::Entry;
use serde_json::Value;
use worker::Env;

use crate::env_config;

/// The caller of an admin route: the Worker env and who they are (for the audit log).
pub struct Admin<'a> {
    pub env: &'a Env,
    pub actor: String,
}

impl<'a> Admin<'a> {
    /// The audit entry of an action taken now.
    fn entry<'e>(&'e self, action: &'e str, target: Value) -> Entry<'e> {
        self.entry_at(action, target, env_config::now_ms())
    }

    /// The audit entry of an action taken at `now_ms` (the time its own writes record).
    pub fn entry_at<'e>(&'e self, action: &'e str, target: Value, now_ms: i64) -> Entry<'e> {
        Entry {
            actor: &self.actor,
            action,
            target,
            now_ms,
        }
    }
}

/// Trims a page fetched with one extra row; the cursor of its last row if there is more.
pub(crate) fn page_end<T>(
    rows: &mut Vec<T>,
    limit: u32,
    cursor: impl Fn(&T) -> String,
) -> Option<String> {
    if rows.len() > limit as usize {
        rows.truncate(limit as usize);
        rows.last().map(cursor)
    } else {
        None
    }
}
