//! The maintenance sweep's pure decisions: its configuration (vars with defaults) and seed
//! 002's priority aging.

use crate::config_var::int_var;

/// Seed 002: a job waiting over an hour gains +10 priority every 5 minutes, up to
/// [`crate::enqueue::MAX_PRIORITY`].
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
    /// deleted this long after they finished (seed 000: 90 days).
    pub retain_succeeded_ms: i64,
    /// `RETAIN_DEAD_DAYS`: dead jobs are kept longer, for investigation.
    pub retain_dead_ms: i64,
    /// `SWEEP_BATCH`: rows each service handles per tick at most; a backlog takes more ticks.
    pub batch: u32,
}

const DAY_MS: i64 = 86_400_000;

impl SweepConfig {
    pub const DEFAULT: SweepConfig = SweepConfig {
        outbox_grace_ms: 300_000,
        retain_succeeded_ms: 90 * DAY_MS,
        retain_dead_ms: 180 * DAY_MS,
        batch: 100,
    };

    /// Reads the vars through `var`; an unset, blank or unusable value keeps its default and
    /// is reported in the returned warnings (a misconfigured var never stops the sweep).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> (SweepConfig, Vec<String>) {
        let mut warnings = Vec::new();
        let mut read = |name: &str, default: i64, unit_ms: i64, max: i64| -> i64 {
            let value = var(name).filter(|v| !v.trim().is_empty());
            int_var(name, value, max, "the default", &mut warnings).map_or(default, |n| n * unit_ms)
        };
        let d = SweepConfig::DEFAULT;
        let config = SweepConfig {
            outbox_grace_ms: read("OUTBOX_GRACE_SECS", d.outbox_grace_ms, 1000, 86_400),
            retain_succeeded_ms: read("RETAIN_SUCCEEDED_DAYS", d.retain_succeeded_ms, DAY_MS, 3650),
            retain_dead_ms: read("RETAIN_DEAD_DAYS", d.retain_dead_ms, DAY_MS, 3650),
            batch: read("SWEEP_BATCH", d.batch.into(), 1, 1000) as u32,
        };
        (config, warnings)
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
        ]
        .into();
        let (config, warnings) =
            SweepConfig::from_vars(|name| vars.get(name).map(|v| v.to_string()));
        assert_eq!(config.outbox_grace_ms, 60_000);
        assert_eq!(config.retain_succeeded_ms, 7 * DAY_MS);
        assert_eq!(config.retain_dead_ms, SweepConfig::DEFAULT.retain_dead_ms);
        assert_eq!(config.batch, 100);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].starts_with("RETAIN_DEAD_DAYS"), "{warnings:?}");
    }
}
