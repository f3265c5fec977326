//! Queue families: each is one Cloudflare queue plus its dead-letter queue, with
//! its own priority, consumer concurrency, SLA and escalation (docs/app-guide.md "Families").

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    High,
    Default,
    Screenshot,
    Low,
    Bulk,
}

/// Who hears about a job that exhausted its attempts (docs/operating.md "Escalation of dead jobs").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Escalation {
    /// Paging webhook (PagerDuty Events v2 style): someone is woken up.
    Page,
    /// Chat webhook (Slack style).
    Chat,
    /// Collected into the daily digest.
    Digest,
}

/// The priority from which a job takes its family's express lane (docs/app-guide.md "Families").
pub const EXPRESS_PRIORITY: i64 = 50;

/// Which of its family's queues a job's message travels in. Queues deliver in arrival order, so
/// a family's jobs of priority [`EXPRESS_PRIORITY`] and up get a queue of their own, consumed
/// beside the normal one: they never wait behind its backlog.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lane {
    Normal,
    Express,
}

/// A queue's name and its binding in the Workers' wrangler config.
struct QueueRef {
    name: &'static str,
    binding: &'static str,
}

/// Everything about a family in one row, so names and bindings cannot drift apart.
struct Row {
    name: &'static str,
    priority: u8,
    concurrency: u32,
    sla_secs: Option<u32>,
    escalation: Escalation,
    queue: &'static str,
    dlq: &'static str,
    queue_binding: &'static str,
    dlq_binding: &'static str,
    /// Its express lane; none for screenshot, whose 3 browser slots one queue must hold.
    express: Option<QueueRef>,
    lease_secs: u32,
    admit_priority: Option<u8>,
}

impl Family {
    pub const ALL: [Family; 5] = [
        Family::High,
        Family::Default,
        Family::Screenshot,
        Family::Low,
        Family::Bulk,
    ];

    fn row(self) -> &'static Row {
        match self {
            Family::High => &Row {
                name: "high",
                priority: 0,
                concurrency: 20,
                sla_secs: Some(30),
                escalation: Escalation::Page,
                queue: "jobs-high",
                dlq: "jobs-high-dlq",
                queue_binding: "QUEUE_HIGH",
                dlq_binding: "DLQ_HIGH",
                express: Some(QueueRef {
                    name: "jobs-high-express",
                    binding: "QUEUE_HIGH_EXPRESS",
                }),
                lease_secs: 300,
                admit_priority: Some(90),
            },
            Family::Default => &Row {
                name: "default",
                priority: 5,
                concurrency: 10,
                sla_secs: Some(300),
                escalation: Escalation::Chat,
                queue: "jobs-default",
                dlq: "jobs-default-dlq",
                queue_binding: "QUEUE_DEFAULT",
                dlq_binding: "DLQ_DEFAULT",
                express: Some(QueueRef {
                    name: "jobs-default-express",
                    binding: "QUEUE_DEFAULT_EXPRESS",
                }),
                lease_secs: 300,
                admit_priority: Some(70),
            },
            // Concurrency 3 is a hard limit: each headless browser needs its own memory/slot.
            Family::Screenshot => &Row {
                name: "screenshot",
                priority: 6,
                concurrency: 3,
                sla_secs: Some(120),
                escalation: Escalation::Chat,
                queue: "jobs-screenshot",
                dlq: "jobs-screenshot-dlq",
                queue_binding: "QUEUE_SCREENSHOT",
                dlq_binding: "DLQ_SCREENSHOT",
                express: None,
                lease_secs: 300,
                admit_priority: None,
            },
            Family::Low => &Row {
                name: "low",
                priority: 7,
                concurrency: 5,
                sla_secs: Some(1800),
                escalation: Escalation::Digest,
                queue: "jobs-low",
                dlq: "jobs-low-dlq",
                queue_binding: "QUEUE_LOW",
                dlq_binding: "DLQ_LOW",
                express: Some(QueueRef {
                    name: "jobs-low-express",
                    binding: "QUEUE_LOW_EXPRESS",
                }),
                lease_secs: 900,
                admit_priority: Some(50),
            },
            Family::Bulk => &Row {
                name: "bulk",
                priority: 8,
                concurrency: 8,
                sla_secs: None,
                escalation: Escalation::Digest,
                queue: "jobs-bulk",
                dlq: "jobs-bulk-dlq",
                queue_binding: "QUEUE_BULK",
                dlq_binding: "DLQ_BULK",
                express: Some(QueueRef {
                    name: "jobs-bulk-express",
                    binding: "QUEUE_BULK_EXPRESS",
                }),
                lease_secs: 900,
                admit_priority: None,
            },
        }
    }

    pub fn as_str(self) -> &'static str {
        self.row().name
    }

    pub fn parse(s: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// Family rank, lower runs first (docs/app-guide.md "Families"). Not the per-job priority
    /// (0-100), which picks a job's lane inside its family ([`Family::lane_for`]).
    pub fn priority(self) -> u8 {
        self.row().priority
    }

    /// Consumer `max_concurrency` for the family's queue.
    pub fn concurrency(self) -> u32 {
        self.row().concurrency
    }

    /// p95 latency target; `None` is best effort.
    pub fn sla_secs(self) -> Option<u32> {
        self.row().sla_secs
    }

    pub fn escalation(self) -> Escalation {
        self.row().escalation
    }

    pub fn queue_name(self) -> &'static str {
        self.row().queue
    }

    pub fn dlq_name(self) -> &'static str {
        self.row().dlq
    }

    /// Name of the producer binding in wrangler config.
    pub fn queue_binding(self) -> &'static str {
        self.row().queue_binding
    }

    /// The lane a job of `priority` travels in: express from [`EXPRESS_PRIORITY`] in a family
    /// that has one.
    pub fn lane_for(self, priority: i64) -> Lane {
        if priority >= EXPRESS_PRIORITY && self.row().express.is_some() {
            Lane::Express
        } else {
            Lane::Normal
        }
    }

    /// Whether a waiting job raised from priority `from` to `to` enters the express lane: its
    /// message waits in the normal lane, so it needs one there.
    pub fn enters_express(self, from: i64, to: i64) -> bool {
        self.lane_for(from) == Lane::Normal && self.lane_for(to) == Lane::Express
    }

    /// The binding of the family's queue for `lane` (its normal queue when it has no express one).
    pub fn lane_binding(self, lane: Lane) -> &'static str {
        match (lane, &self.row().express) {
            (Lane::Express, Some(express)) => express.binding,
            _ => self.row().queue_binding,
        }
    }

    /// The name of its express lane's queue, if it has one.
    pub fn express_queue_name(self) -> Option<&'static str> {
        self.row().express.as_ref().map(|q| q.name)
    }

    pub fn dlq_binding(self) -> &'static str {
        self.row().dlq_binding
    }

    /// How long a claimed attempt owns its job before the sweep may rescue it (5 minutes;
    /// 15 for the families whose types may run 5 minutes). The
    /// consumer's claim and the sweep's rescuer both read it here, so they always agree.
    pub fn lease_secs(self) -> u32 {
        self.row().lease_secs
    }

    pub fn lease_ms(self) -> i64 {
        i64::from(self.lease_secs()) * 1000
    }

    /// The family a starving job of this one moves up to: bulk -> low -> default -> high.
    /// Screenshot jobs need its browser slots and nothing else may take them.
    pub fn next_up(self) -> Option<Family> {
        match self {
            Family::Bulk => Some(Family::Low),
            Family::Low => Some(Family::Default),
            Family::Default => Some(Family::High),
            Family::High | Family::Screenshot => None,
        }
    }

    /// The priority a waiting job needs to be promoted into this family (priority aging
    /// raises it); `None`: no job is promoted into it.
    pub fn admit_priority(self) -> Option<u8> {
        self.row().admit_priority
    }

    /// Where a starving job waiting here is promoted, if anywhere: the family one step up and
    /// the priority the job needs to enter it.
    pub fn promotion(self) -> Option<(Family, u8)> {
        let up = self.next_up()?;
        Some((up, up.admit_priority()?))
    }

    /// Which family a consumer batch came from, and whether it is the DLQ, by the name's end:
    /// `<prefix><family>`, `<prefix><family>-express` or `<prefix><family>-dlq`, so an
    /// environment's queues (`jobs-staging-high`, docs/operating.md "Deploy") read like the default
    /// ones.
    pub fn from_queue_name(name: &str) -> Option<(Family, bool)> {
        let (rest, dlq) = match name.strip_suffix("-dlq") {
            Some(rest) => (rest, true),
            None => (name.strip_suffix("-express").unwrap_or(name), false),
        };
        let family = Family::parse(rest.rsplit('-').next()?)?;
        Some((family, dlq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_the_readme() {
        let rows: Vec<_> = Family::ALL
            .iter()
            .map(|f| (f.as_str(), f.priority(), f.concurrency(), f.sla_secs()))
            .collect();
        assert_eq!(
            rows,
            [
                ("high", 0, 20, Some(30)),
                ("default", 5, 10, Some(300)),
                ("screenshot", 6, 3, Some(120)),
                ("low", 7, 5, Some(1800)),
                ("bulk", 8, 8, None),
            ]
        );
    }

    #[test]
    fn names_and_bindings() {
        assert_eq!(Family::High.queue_name(), "jobs-high");
        assert_eq!(Family::Screenshot.dlq_name(), "jobs-screenshot-dlq");
        assert_eq!(Family::Bulk.queue_binding(), "QUEUE_BULK");
        assert_eq!(Family::Default.dlq_binding(), "DLQ_DEFAULT");
        for f in Family::ALL {
            assert_eq!(f.queue_name(), format!("jobs-{}", f.as_str()));
            assert_eq!(f.dlq_name(), format!("jobs-{}-dlq", f.as_str()));
            assert_eq!(
                f.queue_binding(),
                format!("QUEUE_{}", f.as_str().to_uppercase())
            );
            assert_eq!(
                f.dlq_binding(),
                format!("DLQ_{}", f.as_str().to_uppercase())
            );
        }
    }

    #[test]
    fn lanes_by_priority() {
        for f in Family::ALL {
            assert_eq!(f.lane_for(EXPRESS_PRIORITY - 1), Lane::Normal);
            assert_eq!(f.lane_binding(Lane::Normal), f.queue_binding());
            let express = f.lane_for(EXPRESS_PRIORITY);
            if f == Family::Screenshot {
                assert_eq!(express, Lane::Normal, "one queue holds the browser slots");
                assert_eq!(f.express_queue_name(), None);
            } else {
                assert_eq!(express, Lane::Express);
                assert_eq!(
                    f.express_queue_name(),
                    Some(format!("jobs-{}-express", f.as_str()).as_str())
                );
                assert_eq!(
                    f.lane_binding(Lane::Express),
                    format!("QUEUE_{}_EXPRESS", f.as_str().to_uppercase())
                );
            }
        }
    }

    #[test]
    fn a_raise_across_the_threshold_enters_express() {
        assert!(Family::Low.enters_express(40, 50));
        assert!(!Family::Low.enters_express(50, 60), "already express");
        assert!(!Family::Low.enters_express(30, 40));
        assert!(
            !Family::Low.enters_express(60, 40),
            "a lowered job keeps its message"
        );
        assert!(!Family::Screenshot.enters_express(0, 100));
    }

    /// The Workers' wrangler configs name each family's queues and bindings as its row does, and
    /// consume each queue with the family's concurrency.
    #[test]
    fn the_wrangler_configs_follow_the_rows() {
        let producer = include_str!("../../../wrangler.toml");
        let consumer = include_str!("../../../consumer/wrangler.toml");
        let sends =
            |binding: &str, queue: &str| format!("binding = \"{binding}\"\nqueue = \"{queue}\"\n");
        for f in Family::ALL {
            let mut queues = vec![(f.queue_binding(), f.queue_name())];
            queues.extend(
                f.express_queue_name()
                    .map(|q| (f.lane_binding(Lane::Express), q)),
            );
            queues.push((f.dlq_binding(), f.dlq_name()));
            for (binding, queue) in queues {
                for config in [producer, consumer] {
                    assert!(
                        config.contains(&sends(binding, queue)),
                        "{binding} -> {queue}"
                    );
                }
            }
            for queue in [Some(f.queue_name()), f.express_queue_name()]
                .into_iter()
                .flatten()
            {
                let start = consumer
                    .find(&format!("queue = \"{queue}\"\nmax_batch_size"))
                    .unwrap_or_else(|| panic!("{queue} is consumed"));
                let block = &consumer[start
                    ..consumer[start..]
                        .find("\n\n")
                        .map_or(consumer.len(), |e| start + e)];
                let concurrency = format!("max_concurrency = {}\n", f.concurrency());
                assert!(block.contains(&concurrency), "{queue}: {concurrency}");
                let dlq = format!("dead_letter_queue = \"{}\"", f.dlq_name());
                assert!(block.contains(&dlq), "{queue}: {dlq}");
            }
        }
    }

    #[test]
    fn escalation_by_family() {
        assert_eq!(Family::High.escalation(), Escalation::Page);
        assert_eq!(Family::Default.escalation(), Escalation::Chat);
        assert_eq!(Family::Screenshot.escalation(), Escalation::Chat);
        assert_eq!(Family::Low.escalation(), Escalation::Digest);
        assert_eq!(Family::Bulk.escalation(), Escalation::Digest);
    }

    #[test]
    fn leases_are_five_minutes_and_fifteen_for_the_slow_families() {
        // That each outlasts every attempt in its family is the registry's check of each row.
        assert_eq!(Family::High.lease_secs(), 300);
        assert_eq!(Family::Bulk.lease_secs(), 900);
    }

    #[test]
    fn promotion_climbs_one_family_at_its_threshold() {
        let promoted = |f: Family, priority: i64| {
            f.promotion()
                .filter(|(_, at)| priority >= i64::from(*at))
                .map(|(up, _)| up)
        };
        assert_eq!(promoted(Family::Bulk, 49), None);
        assert_eq!(promoted(Family::Bulk, 50), Some(Family::Low));
        assert_eq!(promoted(Family::Low, 70), Some(Family::Default));
        assert_eq!(promoted(Family::Default, 89), None);
        assert_eq!(promoted(Family::Default, 90), Some(Family::High));
        assert_eq!(promoted(Family::High, 100), None);
        assert_eq!(promoted(Family::Screenshot, 100), None);
        // Nothing but screenshot jobs enters the browser family, and bulk is never a target.
        for f in Family::ALL {
            assert_ne!(f.next_up(), Some(Family::Screenshot));
            assert_ne!(f.next_up(), Some(Family::Bulk));
            if let Some(up) = f.next_up() {
                assert!(up.priority() < f.priority(), "{f:?} -> {up:?} moves up");
                assert!(up.admit_priority().is_some());
            }
        }
    }

    #[test]
    fn parse_round_trips() {
        for f in Family::ALL {
            assert_eq!(Family::parse(f.as_str()), Some(f));
            assert_eq!(Family::from_queue_name(f.queue_name()), Some((f, false)));
            assert_eq!(Family::from_queue_name(f.dlq_name()), Some((f, true)));
            assert_eq!(
                serde_json::to_value(f).unwrap(),
                serde_json::json!(f.as_str())
            );
        }
        assert_eq!(
            Family::from_queue_name("jobs-default-express"),
            Some((Family::Default, false))
        );
        assert_eq!(Family::parse("HIGH"), None);
        assert_eq!(Family::from_queue_name("jobs-urgent"), None);
        assert_eq!(
            Family::from_queue_name("jobs-staging-low-express"),
            Some((Family::Low, false))
        );
        assert_eq!(
            Family::from_queue_name("jobs-staging-bulk-dlq"),
            Some((Family::Bulk, true))
        );
        assert_eq!(Family::from_queue_name("jobs-staging-express"), None);
    }
}
