//! What every service of the sweep is given: the tick.

use std::cell::Cell;

use jobs_shared::observe::log_line::{fault, LogLevel};
use jobs_shared::retry::retry_policy::QueueDelayLimit;
use jobs_shared::runtime::queue_send::queue_delay_limit;
use jobs_shared::schedule::sweep_policy::{SweepBudget, SweepConfig};
use worker::{D1Database, Env};

use crate::env_config;

/// What every service gets: the bindings, the config, the tick's time (the event's
/// scheduled time, so tests choose it) and what the recovery services may still spend.
pub struct Tick<'a> {
    pub env: &'a Env,
    pub db: &'a D1Database,
    pub config: SweepConfig,
    /// QUEUE_MAX_DELAY_SECS: a job due further out waits in D1 (see job_scheduler).
    pub queue_limit: QueueDelayLimit,
    pub now_ms: i64,
    pub budget: Cell<SweepBudget>,
}

impl<'a> Tick<'a> {
    /// The tick due at `now_ms`, with the sweep's config read from the vars (a bad value keeps
    /// its default and is reported).
    pub fn new(env: &'a Env, db: &'a D1Database, now_ms: i64) -> Tick<'a> {
        let (config, warnings) = SweepConfig::from_vars(|name| env_config::string(env, name));
        for warning in warnings {
            fault(LogLevel::Error, "config", warning);
        }
        Tick {
            env,
            db,
            config,
            queue_limit: queue_delay_limit(env),
            now_ms,
            // The runtime's clock: the scheduled time says nothing about when the tick began.
            budget: Cell::new(SweepBudget::new(&config, env_config::now_ms())),
        }
    }
}
