//! Work that runs on a clock: cron expressions, schedule definitions and the maintenance
//! sweep's pure decisions.

pub mod cron_schedule;
pub mod schedule_spec;
pub mod sweep_policy;
pub mod time_zones;
pub mod tz_record;
