//! The alert rules the sweep evaluates every tick (README "Alerts"): what is firing now,
//! given what D1 says. Budget alerts are the ones the budget
//! module raised this month (table `budget_alerts`, at its 75/90/100 % thresholds). One alert per (rule, key); the sweep opens
//! it when it starts firing and resolves it when it stops, so a condition that lasts an hour
//! notifies twice (open, resolved), not sixty times.

use serde::Deserialize;

use crate::budget::{alert_severity, RaisedAlert};
use crate::job::family::{Escalation, Family};
use crate::observe::severity::Severity;
use crate::util::config_var::int_var;

/// Thresholds, each a var with a default: failure rate over 10 % in an hour, backlog over
/// 1000 per family, jobs running over an hour.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertConfig {
    /// `ALERT_BACKLOG_THRESHOLD`: a family's due backlog above this fires.
    pub backlog: i64,
    /// `ALERT_FAILURE_RATE_PCT`: failed attempts over this share of the last hour's fires...
    pub failure_rate_pct: i64,
    /// `ALERT_FAILURE_MIN_RUNS`: ...once the hour has at least this many attempts.
    pub failure_min_runs: i64,
    /// `ALERT_RUNNING_SECS`: a job running longer than this fires.
    pub running_secs: i64,
    /// `ALERT_SCHEDULE_GRACE_SECS`: an enabled schedule this far past its due time fires.
    pub schedule_grace_secs: i64,
}

impl AlertConfig {
    pub fn default_config() -> AlertConfig {
        AlertConfig {
            backlog: 1000,
            failure_rate_pct: 10,
            failure_min_runs: 20,
            running_secs: 3600,
            schedule_grace_secs: 300,
        }
    }

    /// Reads the vars; a bad value keeps its default and is reported.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> (AlertConfig, Vec<String>) {
        let mut warnings = Vec::new();
        let d = AlertConfig::default_config();
        let mut int = |name: &str, default: i64, max: i64| {
            int_var(name, var(name), max, default, &mut warnings).unwrap_or(default)
        };
        let backlog = int("ALERT_BACKLOG_THRESHOLD", d.backlog, 100_000_000);
        let failure_rate_pct = int("ALERT_FAILURE_RATE_PCT", d.failure_rate_pct, 100);
        let failure_min_runs = int("ALERT_FAILURE_MIN_RUNS", d.failure_min_runs, 1_000_000);
        let running_secs = int("ALERT_RUNNING_SECS", d.running_secs, 7 * 86_400);
        let schedule_grace_secs = int("ALERT_SCHEDULE_GRACE_SECS", d.schedule_grace_secs, 86_400);
        let config = AlertConfig {
            backlog,
            failure_rate_pct,
            failure_min_runs,
            running_secs,
            schedule_grace_secs,
        };
        (config, warnings)
    }
}

/// What the sweep read (one D1 batch).
#[derive(Clone, Debug, Default)]
pub struct Observations {
    pub families: Vec<FamilyWindow>,
    pub long_running: Vec<LongRunning>,
    pub schedules: Vec<LateSchedule>,
    /// This month's rows of `budget_alerts`.
    pub budgets: Vec<RaisedAlert>,
}

/// A family's backlog now and its last hour of attempts.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct FamilyWindow {
    pub family: String,
    #[serde(default)]
    pub backlog: i64,
    #[serde(default)]
    pub runs: i64,
    #[serde(default)]
    pub failed: i64,
}

#[derive(Clone, Debug, Deserialize)]
pub struct LongRunning {
    pub family: String,
    pub count: i64,
    pub oldest_started_at: i64,
}

/// An enabled schedule past its due time by more than the grace, or one whose recent run
/// found missed runs (downtime swallowed them).
#[derive(Clone, Debug, Deserialize)]
pub struct LateSchedule {
    pub name: String,
    pub next_run_at: Option<i64>,
    #[serde(default)]
    pub missed_recent: i64,
}

/// A rule firing for one key now.
#[derive(Clone, Debug, PartialEq)]
pub struct Firing {
    pub rule: &'static str,
    pub key: String,
    pub severity: Severity,
    pub summary: String,
}

/// Who hears about an alert, by its key (stored alerts keep only rule and key): alerts about
/// the high family page; everything else goes to chat.
pub fn alert_channel(key: &str) -> Escalation {
    match Family::parse(key) {
        Some(family) if family.escalation() == Escalation::Page => Escalation::Page,
        _ => Escalation::Chat,
    }
}

/// Every (rule, key) firing now.
pub fn firing(obs: &Observations, config: &AlertConfig, now_ms: i64) -> Vec<Firing> {
    let mut out = Vec::new();
    for f in &obs.families {
        if f.backlog > config.backlog {
            out.push(Firing {
                rule: "backlog",
                key: f.family.clone(),
                severity: Severity::Warning,
                summary: format!(
                    "{} backlog is {} jobs (threshold {})",
                    f.family, f.backlog, config.backlog
                ),
            });
        }
        if f.runs >= config.failure_min_runs && f.failed * 100 > f.runs * config.failure_rate_pct {
            out.push(Firing {
                rule: "failure_rate",
                key: f.family.clone(),
                severity: Severity::Warning,
                summary: format!(
                    "{} failure rate is {:.1} % over the last hour ({} of {} attempts; threshold {} %)",
                    f.family,
                    f.failed as f64 * 100.0 / f.runs as f64,
                    f.failed,
                    f.runs,
                    config.failure_rate_pct
                ),
            });
        }
    }
    for r in &obs.long_running {
        out.push(Firing {
            rule: "long_running",
            key: r.family.clone(),
            severity: Severity::Warning,
            summary: format!(
                "{} {} job(s) running over {} s (oldest started {} s ago)",
                r.count,
                r.family,
                config.running_secs,
                (now_ms - r.oldest_started_at) / 1000
            ),
        });
    }
    for s in &obs.schedules {
        let late = s
            .next_run_at
            .filter(|at| now_ms - at > config.schedule_grace_secs * 1000);
        let summary = match (late, s.missed_recent) {
            (Some(at), _) => format!(
                "schedule {} has not run: due {} s ago",
                s.name,
                (now_ms - at) / 1000
            ),
            (None, n) if n > 0 => format!(
                "schedule {} missed {n} run(s) in the last hour (downtime)",
                s.name
            ),
            _ => continue,
        };
        out.push(Firing {
            rule: "schedule_missed",
            key: s.name.clone(),
            severity: Severity::Warning,
            summary,
        });
    }
    for b in &obs.budgets {
        out.push(Firing {
            rule: "budget",
            key: format!("{}:{}", b.job_type, b.threshold),
            severity: alert_severity(b.threshold),
            summary: format!(
                "{} reached {} % of this month's budget (${:.2} of ${:.2})",
                b.job_type,
                b.threshold,
                b.spent_cents / 100.0,
                b.limit_cents as f64 / 100.0
            ),
        });
    }
    out
}

/// An alert as stored: open or resolved.
#[derive(Clone, Debug, Deserialize)]
pub struct StoredAlert {
    pub rule: String,
    pub key: String,
    pub status: String,
}

/// What to write: alerts to open (new, or resolved before) and open alerts to resolve.
pub fn changes<'a>(
    firing: &'a [Firing],
    stored: &'a [StoredAlert],
) -> (Vec<&'a Firing>, Vec<&'a StoredAlert>) {
    let is_open = |rule: &str, key: &str| {
        stored
            .iter()
            .any(|s| s.rule == rule && s.key == key && s.status == "open")
    };
    let open = firing.iter().filter(|f| !is_open(f.rule, &f.key)).collect();
    let resolve = stored
        .iter()
        .filter(|s| {
            s.status == "open" && !firing.iter().any(|f| f.rule == s.rule && f.key == s.key)
        })
        .collect();
    (open, resolve)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_750_000_000_000;

    fn obs() -> Observations {
        Observations {
            families: vec![
                FamilyWindow {
                    family: "high".into(),
                    backlog: 1001,
                    runs: 100,
                    failed: 10,
                },
                FamilyWindow {
                    family: "default".into(),
                    backlog: 1000,
                    runs: 20,
                    failed: 3,
                },
                FamilyWindow {
                    family: "low".into(),
                    backlog: 0,
                    runs: 19,
                    failed: 19,
                },
            ],
            long_running: vec![LongRunning {
                family: "bulk".into(),
                count: 2,
                oldest_started_at: NOW - 7_200_000,
            }],
            schedules: vec![
                LateSchedule {
                    name: "late".into(),
                    next_run_at: Some(NOW - 301_000),
                    missed_recent: 0,
                },
                LateSchedule {
                    name: "grace".into(),
                    next_run_at: Some(NOW - 299_000),
                    missed_recent: 0,
                },
                LateSchedule {
                    name: "downtime".into(),
                    next_run_at: Some(NOW + 1),
                    missed_recent: 3,
                },
            ],
            budgets: [75, 90]
                .map(|threshold| RaisedAlert {
                    job_type: "ai_tagging".into(),
                    month: "2025-06".into(),
                    threshold,
                    spent_cents: 45_000.0,
                    limit_cents: 50_000,
                })
                .to_vec(),
        }
    }

    #[test]
    fn thresholds_are_strict_and_need_volume() {
        let fired = firing(&obs(), &AlertConfig::default_config(), NOW);
        let keys: Vec<(&str, &str)> = fired.iter().map(|f| (f.rule, f.key.as_str())).collect();
        assert_eq!(
            keys,
            [
                ("backlog", "high"),
                ("failure_rate", "default"),
                ("long_running", "bulk"),
                ("schedule_missed", "late"),
                ("schedule_missed", "downtime"),
                ("budget", "ai_tagging:75"),
                ("budget", "ai_tagging:90"),
            ]
        );
        // 10 % exactly does not fire; 3 of 20 (15 %) does; 19 of 19 is below the minimum volume.
        assert!(fired[1].summary.contains("15.0 %"), "{}", fired[1].summary);
        assert_eq!(fired[6].severity, Severity::Warning);
        assert_eq!(fired[5].severity, Severity::Info);
        assert_eq!(alert_channel(&fired[0].key), Escalation::Page);
        assert_eq!(alert_channel(&fired[1].key), Escalation::Chat);
    }

    #[test]
    fn opens_new_alerts_once_and_resolves_cleared_ones() {
        let fired = firing(&obs(), &AlertConfig::default_config(), NOW);
        let stored = vec![
            StoredAlert {
                rule: "backlog".into(),
                key: "high".into(),
                status: "open".into(),
            },
            StoredAlert {
                rule: "failure_rate".into(),
                key: "default".into(),
                status: "resolved".into(),
            },
            StoredAlert {
                rule: "backlog".into(),
                key: "bulk".into(),
                status: "open".into(),
            },
            StoredAlert {
                rule: "backlog".into(),
                key: "low".into(),
                status: "resolved".into(),
            },
        ];
        let (open, resolve) = changes(&fired, &stored);
        assert_eq!(
            open.len(),
            fired.len() - 1,
            "the open backlog alert is not opened again"
        );
        assert!(
            open.iter().any(|f| f.rule == "failure_rate"),
            "a resolved alert reopens"
        );
        let resolved: Vec<&str> = resolve.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(resolved, ["bulk"]);
    }

    #[test]
    fn config_from_vars() {
        let (c, w) = AlertConfig::from_vars(|_| None);
        assert_eq!(c, AlertConfig::default_config());
        assert!(w.is_empty());
        let (c, w) = AlertConfig::from_vars(|name| match name {
            "ALERT_BACKLOG_THRESHOLD" => Some("5".into()),
            "ALERT_FAILURE_RATE_PCT" => Some("0".into()),
            _ => None,
        });
        assert_eq!((c.backlog, c.failure_rate_pct), (5, 10));
        assert_eq!(w.len(), 1);
    }
}
