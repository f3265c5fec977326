//! Per family and minute: what the consumer's batches recorded and the sweep's backlog reading
//! (D1 table `job_minutes`), behind the dashboard's charts (docs/operating.md "Operating it:
//! admin API and dashboard"). The consumer adds its batch's tally in the batch's own record (one
//! upsert per family-minute the batch ended attempts in, not per job); the sweep writes each
//! family's backlog once a tick. A chart reads at most 60 rows per family, however many jobs ran.

use serde::{Deserialize, Serialize};

use crate::job::family::Family;
use crate::job::job_outcome::Decision;
use crate::observe::execution_histogram::{bucket_of, BUCKETS};
use crate::observe::job_event::Settled;

pub const MINUTE_MS: i64 = 60_000;

/// The most minutes a history covers.
pub const MAX_HISTORY_MINUTES: i64 = 24 * 60;

/// The minute `at_ms` falls in (its start, ms).
pub fn minute_of(at_ms: i64) -> i64 {
    at_ms.div_euclid(MINUTE_MS) * MINUTE_MS
}

/// The attempts a family-minute counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MinuteCounts {
    pub succeeded: i64,
    /// Retried or dead (a skip is no failure).
    pub failed: i64,
    pub dead: i64,
    pub sum_ms: i64,
    pub max_ms: i64,
}

/// What one batch adds to a family-minute: what it settled in that minute (the store writes
/// `retried + dead` as `failed`), and its successes' durations and waits, which stats' last
/// hour reads from here (shared `observe::last_hour`; the failed attempts' are on their runs).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MinuteTally {
    pub family: &'static str,
    pub minute: i64,
    #[serde(flatten)]
    pub settled: Settled,
    /// The successes by duration bucket (shared `execution_histogram`).
    pub durations: [u32; BUCKETS],
    /// The successes that were their job's first run, and their waits (enqueue to start).
    pub waited: u32,
    pub wait_sum_ms: i64,
}

/// An attempt that ended: when, how long it took, what followed it, and its wait from enqueue
/// to start when it was its job's first run.
pub struct Ended<'a> {
    pub finished_at: i64,
    pub duration_ms: i64,
    pub decision: &'a Decision,
    pub wait_ms: Option<i64>,
}

/// A batch's attempts, settled per minute (in minute order).
pub fn tally<'a>(family: Family, ended: impl IntoIterator<Item = Ended<'a>>) -> Vec<MinuteTally> {
    let mut out: Vec<MinuteTally> = Vec::new();
    for e in ended {
        let minute = minute_of(e.finished_at);
        let at = match out.iter().position(|t| t.minute == minute) {
            Some(at) => at,
            None => {
                out.push(MinuteTally {
                    family: family.as_str(),
                    minute,
                    ..MinuteTally::default()
                });
                out.len() - 1
            }
        };
        let minute = &mut out[at];
        minute.settled.add(e.decision, e.duration_ms);
        if matches!(e.decision, Decision::Succeed) {
            minute.durations[bucket_of(e.duration_ms)] += 1;
            if let Some(wait) = e.wait_ms {
                minute.waited += 1;
                minute.wait_sum_ms += wait;
            }
        }
    }
    out.sort_by_key(|t| t.minute);
    out
}

/// A stored family-minute.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct MinuteRow {
    pub family: String,
    pub minute: i64,
    #[serde(flatten)]
    pub counts: MinuteCounts,
    pub backlog: Option<i64>,
}

/// One point of a family's series: a minute with nothing recorded is all zeros, and its backlog
/// unknown (`None`) when no tick read it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    pub minute: i64,
    pub succeeded: i64,
    pub failed: i64,
    pub dead: i64,
    pub avg_ms: Option<i64>,
    pub max_ms: Option<i64>,
    pub backlog: Option<i64>,
}

/// Each family's series over the `minutes` whole minutes before `now_ms`'s and that one, oldest
/// first, from the stored rows.
pub fn series(rows: &[MinuteRow], now_ms: i64, minutes: i64) -> Vec<(Family, Vec<Point>)> {
    let last = minute_of(now_ms);
    let first = last - (minutes.clamp(1, MAX_HISTORY_MINUTES) - 1) * MINUTE_MS;
    Family::ALL
        .into_iter()
        .map(|family| {
            let points = (0..)
                .map(|i| first + i * MINUTE_MS)
                .take_while(|m| *m <= last)
                .map(|minute| {
                    let row = rows
                        .iter()
                        .find(|r| r.minute == minute && r.family == family.as_str());
                    point(minute, row)
                })
                .collect();
            (family, points)
        })
        .collect()
}

fn point(minute: i64, row: Option<&MinuteRow>) -> Point {
    let Some(r) = row else {
        return Point {
            minute,
            succeeded: 0,
            failed: 0,
            dead: 0,
            avg_ms: None,
            max_ms: None,
            backlog: None,
        };
    };
    let c = &r.counts;
    let ran = c.succeeded + c.failed;
    Point {
        minute,
        succeeded: c.succeeded,
        failed: c.failed,
        dead: c.dead,
        avg_ms: (ran > 0).then(|| c.sum_ms / ran),
        max_ms: (ran > 0).then_some(c.max_ms),
        backlog: r.backlog,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::error_class::{ErrorClass, JobError};

    #[test]
    fn a_batch_is_summed_per_minute() {
        let error = || JobError::new(ErrorClass::ServerError, "x");
        let decisions = [
            Decision::Succeed,
            Decision::Dead { error: error() },
            Decision::Retry {
                error: error(),
                delay_secs: 30,
            },
            Decision::Skip { error: error() },
        ];
        let ended = [(61_000, 10), (119_999, 30), (120_000, 5), (59_000, 7)]
            .into_iter()
            .zip(&decisions)
            .map(|((finished_at, duration_ms), decision)| Ended {
                finished_at,
                duration_ms,
                decision,
                wait_ms: Some(duration_ms * 2),
            });
        let minutes = tally(Family::Low, ended);
        let got: Vec<_> = minutes
            .iter()
            .map(|t| {
                let s = &t.settled;
                let failed = s.retried + s.dead;
                (
                    t.minute,
                    s.succeeded,
                    failed,
                    s.dead,
                    s.duration_ms_sum,
                    s.duration_ms_max,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (0, 0, 0, 0, 7, 7),
                (60_000, 1, 1, 1, 40, 30),
                (120_000, 0, 1, 0, 5, 5)
            ]
        );
        assert!(minutes.iter().all(|t| t.family == "low"));
        // Only the success (10 ms, waited 20) is bucketed and its wait summed.
        let first = &minutes[1];
        assert_eq!(first.durations[bucket_of(10)], 1);
        assert_eq!(first.durations.iter().sum::<u32>(), 1);
        assert_eq!((first.waited, first.wait_sum_ms), (1, 20));
        assert!(minutes[0].durations.iter().all(|n| *n == 0) && minutes[0].waited == 0);
    }

    #[test]
    fn series_fill_every_minute_of_every_family() {
        let rows = [MinuteRow {
            family: "default".into(),
            minute: 120_000,
            counts: MinuteCounts {
                succeeded: 3,
                failed: 1,
                sum_ms: 400,
                max_ms: 250,
                ..MinuteCounts::default()
            },
            backlog: Some(9),
        }];
        let all = series(&rows, 150_000, 3);
        assert_eq!(all.len(), Family::ALL.len());
        let (_, default) = all.iter().find(|(f, _)| *f == Family::Default).unwrap();
        let minutes: Vec<i64> = default.iter().map(|p| p.minute).collect();
        assert_eq!(minutes, [0, 60_000, 120_000]);
        assert_eq!(default[0].avg_ms, None);
        assert_eq!(
            (
                default[2].succeeded,
                default[2].avg_ms,
                default[2].max_ms,
                default[2].backlog
            ),
            (3, Some(100), Some(250), Some(9))
        );
        let (_, high) = all.iter().find(|(f, _)| *f == Family::High).unwrap();
        assert!(high.iter().all(|p| p.succeeded == 0 && p.backlog.is_none()));
        assert_eq!(
            series(&rows, 150_000, 100_000)[0].1.len(),
            MAX_HISTORY_MINUTES as usize
        );
    }
}
