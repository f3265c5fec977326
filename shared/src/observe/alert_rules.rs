//! The alert rules the sweep evaluates every tick (docs/operating.md "Alerts"): what is firing now,
//! given what D1 says. Budget alerts are the ones the budget
//! module raised this month (table `budget_alerts`, at its 75/90/100 % thresholds). One alert per (rule, key); the sweep opens
//! it when it starts firing and resolves it when it stops, so a condition that lasts an hour
//! notifies twice (open, resolved), not sixty times.

use serde::Deserialize;

use crate::budget::{alert_severity, RaisedAlert};
use crate::job::family::{Escalation, Family};
use crate::util::config_var::int_var;
use crate::util::severity::Severity;

/// Thresholds, each a var with a default: failure rate over 10 % in an hour, backlog over
/// 1000 per family, jobs running over an hour, the family's SLA, an average attempt over 5
/// minutes, rate-limit answers over 5 % of attempts, a p95 three times the hour's.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertConfig {
    /// `ALERT_BACKLOG_THRESHOLD`: a family's due backlog above this fires.
    pub backlog: i64,
    /// `ALERT_FAILURE_RATE_PCT`: failed attempts over this share of the last hour's fires...
    pub failure_rate_pct: i64,
    /// `ALERT_FAILURE_MIN_RUNS`: ...once the hour has at least this many attempts (the other
    /// rules on the hour's attempts need as many).
    pub failure_min_runs: i64,
    /// `ALERT_AVG_PROCESSING_SECS`: the hour's attempts taking longer than this on average fire.
    pub avg_processing_secs: i64,
    /// `ALERT_RATE_LIMITED_PCT`: attempts answered 429 (`rate_limited`) over this share fire.
    pub rate_limited_pct: i64,
    /// `ALERT_SPIKE_WINDOW_SECS`: the recent window whose p95 duration is compared with the rest
    /// of the hour's...
    pub spike_window_secs: i64,
    /// `ALERT_SPIKE_FACTOR`: ...firing above this many times it...
    pub spike_factor: i64,
    /// `ALERT_SPIKE_MIN_MS`: ...and above this (a spike from 5 ms to 20 ms is no news).
    pub spike_min_ms: i64,
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
            avg_processing_secs: 300,
            rate_limited_pct: 5,
            spike_window_secs: 300,
            spike_factor: 3,
            spike_min_ms: 1000,
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
        let avg_processing_secs = int("ALERT_AVG_PROCESSING_SECS", d.avg_processing_secs, 86_400);
        let rate_limited_pct = int("ALERT_RATE_LIMITED_PCT", d.rate_limited_pct, 100);
        let spike_window_secs = int("ALERT_SPIKE_WINDOW_SECS", d.spike_window_secs, 1800);
        let spike_factor = int("ALERT_SPIKE_FACTOR", d.spike_factor, 1000);
        let spike_min_ms = int("ALERT_SPIKE_MIN_MS", d.spike_min_ms, 3_600_000);
        let config = AlertConfig {
            backlog,
            failure_rate_pct,
            failure_min_runs,
            running_secs,
            schedule_grace_secs,
            avg_processing_secs,
            rate_limited_pct,
            spike_window_secs,
            spike_factor,
            spike_min_ms,
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
#[serde(default)]
pub struct FamilyWindow {
    pub family: String,
    pub backlog: i64,
    pub runs: i64,
    pub failed: i64,
    /// Attempts that failed `rate_limited` (a 429).
    pub rate_limited: i64,
    pub avg_ms: Option<f64>,
    /// Attempts that ended their job (succeeded or dead), and the p95 of their latency: from
    /// the attempt's due time to its end, the wait in the queue included.
    pub ended: i64,
    pub p95_latency_ms: Option<i64>,
    /// The attempts of the last `ALERT_SPIKE_WINDOW_SECS` and the p95 of their durations,
    /// and the same for the rest of the hour.
    pub recent_runs: i64,
    pub p95_recent_ms: Option<i64>,
    pub baseline_runs: i64,
    pub p95_baseline_ms: Option<i64>,
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
    for f in &obs.families {
        out.extend(window_rules(f, config));
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

/// The rules on a family's hour of attempts beyond its failure rate: SLA breach, processing
/// time, rate limiting and latency spike. Each needs `failure_min_runs` attempts to judge.
fn window_rules(f: &FamilyWindow, config: &AlertConfig) -> Vec<Firing> {
    let min = config.failure_min_runs;
    let fire = |rule, summary| Firing {
        rule,
        key: f.family.clone(),
        severity: Severity::Warning,
        summary,
    };
    let mut out = Vec::new();
    let sla = Family::parse(&f.family).and_then(Family::sla_secs);
    if let (Some(sla), Some(p95)) = (sla, f.p95_latency_ms) {
        if f.ended >= min && p95 > i64::from(sla) * 1000 {
            let summary = format!(
                "{} p95 latency is {:.1} s over the last hour ({} jobs ended; SLA {sla} s)",
                f.family,
                p95 as f64 / 1000.0,
                f.ended
            );
            out.push(fire("sla_breach", summary));
        }
    }
    if let Some(avg) = f
        .avg_ms
        .filter(|avg| f.runs >= min && *avg > (config.avg_processing_secs * 1000) as f64)
    {
        let summary = format!(
            "{} attempts take {:.1} s on average over the last hour (threshold {} s)",
            f.family,
            avg / 1000.0,
            config.avg_processing_secs
        );
        out.push(fire("processing_time", summary));
    }
    if f.runs >= min && f.rate_limited * 100 > f.runs * config.rate_limited_pct {
        let summary = format!(
            "{} rate-limit answers are {:.1} % of the last hour's attempts ({} of {}; threshold {} %)",
            f.family,
            f.rate_limited as f64 * 100.0 / f.runs as f64,
            f.rate_limited,
            f.runs,
            config.rate_limited_pct
        );
        out.push(fire("rate_limited", summary));
    }
    if let (Some(recent), Some(baseline)) = (f.p95_recent_ms, f.p95_baseline_ms) {
        let volume = f.recent_runs >= min && f.baseline_runs >= min;
        if volume && recent >= config.spike_min_ms && recent > baseline * config.spike_factor {
            let summary = format!(
                "{} p95 attempt time is {recent} ms over the last {} s, {:.1}x the rest of the hour's {baseline} ms",
                f.family,
                config.spike_window_secs,
                recent as f64 / baseline.max(1) as f64
            );
            out.push(fire("latency_spike", summary));
        }
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
                    ..FamilyWindow::default()
                },
                FamilyWindow {
                    family: "default".into(),
                    backlog: 1000,
                    runs: 20,
                    failed: 3,
                    ..FamilyWindow::default()
                },
                FamilyWindow {
                    family: "low".into(),
                    backlog: 0,
                    runs: 19,
                    failed: 19,
                    ..FamilyWindow::default()
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

    /// A family's hour with enough attempts, each rule's measure just past its threshold.
    fn busy(family: &str) -> FamilyWindow {
        FamilyWindow {
            family: family.into(),
            runs: 100,
            rate_limited: 6,
            avg_ms: Some(300_001.0),
            ended: 20,
            p95_latency_ms: Some(300_001),
            recent_runs: 20,
            p95_recent_ms: Some(3_001),
            baseline_runs: 80,
            p95_baseline_ms: Some(1_000),
            ..FamilyWindow::default()
        }
    }

    #[test]
    fn window_rules_fire_past_their_thresholds() {
        let config = AlertConfig::default_config();
        let rules = |f: FamilyWindow| -> Vec<&'static str> {
            window_rules(&f, &config).iter().map(|f| f.rule).collect()
        };
        let all = [
            "sla_breach",
            "processing_time",
            "rate_limited",
            "latency_spike",
        ];
        assert_eq!(rules(busy("default")), all);
        assert_eq!(
            rules(busy("bulk")),
            &all[1..],
            "bulk is best effort: no SLA"
        );
        let at = FamilyWindow {
            rate_limited: 5,
            avg_ms: Some(300_000.0),
            p95_latency_ms: Some(300_000),
            p95_recent_ms: Some(3_000),
            ..busy("default")
        };
        assert!(rules(at).is_empty(), "thresholds are strict");
        let quiet = FamilyWindow {
            runs: 19,
            ended: 19,
            recent_runs: 19,
            ..busy("default")
        };
        assert!(rules(quiet).is_empty(), "below the minimum volume");
        let small = FamilyWindow {
            p95_recent_ms: Some(999),
            p95_baseline_ms: Some(10),
            ..busy("default")
        };
        assert!(
            !rules(small).contains(&"latency_spike"),
            "under ALERT_SPIKE_MIN_MS"
        );
        let sla = &window_rules(&busy("high"), &config)[0];
        assert!(sla.summary.contains("SLA 30 s"), "{}", sla.summary);
        assert_eq!(alert_channel(&sla.key), Escalation::Page);
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
