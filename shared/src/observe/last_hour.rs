//! Stats' last hour of attempts (`GET /v1/admin/stats`, docs/operating.md "Operating it: admin
//! API and dashboard"), per family or overall, from two reads
//! bounded by the number of families and buckets, never by the number of jobs that ran: the
//! successes per family-minute (`job_minutes`: their count, durations by bucket and waits) and
//! the failed attempts' run records grouped by family, outcome and duration bucket. The window
//! and its recent part start on a minute, as the successes are counted per minute.

use serde::Deserialize;

use crate::observe::execution_histogram::{percentile, BUCKETS};
use crate::observe::job_minutes::minute_of;

/// How far back the window reaches (from the start of that minute). The alert rules judge the
/// same hour of attempts, so success batches are kept this long (and until rolled up).
pub const WINDOW_MS: i64 = 60 * 60 * 1000;
/// How far back "recent" reaches, for the live throughput.
pub const RECENT_MS: i64 = 5 * 60 * 1000;

/// Where the window starts at `now_ms`.
pub fn window_start(now_ms: i64) -> i64 {
    minute_of(now_ms - WINDOW_MS)
}

/// Where its recent part starts at `now_ms`.
pub fn recent_start(now_ms: i64) -> i64 {
    minute_of(now_ms - RECENT_MS)
}

/// A family's successes in the window (from `job_minutes`).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SuccessRow {
    pub family: String,
    pub succeeded: i64,
    pub succeeded_recent: i64,
    pub waited: i64,
    pub wait_sum_ms: i64,
    /// The longest attempt of these minutes, failed ones included.
    pub max_ms: i64,
    /// Per bucket, as a JSON array.
    pub durations: String,
}

/// A family's failed attempts in the window with one outcome and duration bucket.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct FailedRow {
    pub family: String,
    pub outcome: String,
    pub bucket: usize,
    pub count: i64,
    pub recent: i64,
    pub waited: i64,
    pub wait_sum_ms: i64,
    pub max_ms: i64,
}

/// The window's attempts for one family or all.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Window {
    pub finished: i64,
    pub succeeded: i64,
    pub retried: i64,
    pub dead: i64,
    pub finished_recent: i64,
    waited: i64,
    wait_sum_ms: i64,
    max_ms: i64,
    durations: [i64; BUCKETS],
}

impl Window {
    /// The attempts of `family` (None: every family) among the rows.
    pub fn of(family: Option<&str>, successes: &[SuccessRow], failed: &[FailedRow]) -> Window {
        let counted = |f: &str| family.is_none_or(|want| want == f);
        let mut w = Window::default();
        for s in successes.iter().filter(|s| counted(&s.family)) {
            w.finished += s.succeeded;
            w.succeeded += s.succeeded;
            w.finished_recent += s.succeeded_recent;
            w.waited += s.waited;
            w.wait_sum_ms += s.wait_sum_ms;
            w.max_ms = w.max_ms.max(s.max_ms);
            let counts: Vec<i64> = serde_json::from_str(&s.durations).unwrap_or_default();
            for (total, n) in w.durations.iter_mut().zip(counts) {
                *total += n;
            }
        }
        for f in failed.iter().filter(|f| counted(&f.family)) {
            w.finished += f.count;
            match f.outcome.as_str() {
                "retrying" => w.retried += f.count,
                "dead" => w.dead += f.count,
                _ => {}
            }
            w.finished_recent += f.recent;
            w.waited += f.waited;
            w.wait_sum_ms += f.wait_sum_ms;
            w.max_ms = w.max_ms.max(f.max_ms);
            if let Some(total) = w.durations.get_mut(f.bucket) {
                *total += f.count;
            }
        }
        w
    }

    /// The `p`th percentile of the attempts' durations (see `execution_histogram::percentile`).
    pub fn percentile_ms(&self, p: i64) -> Option<i64> {
        percentile(&self.durations, p, self.max_ms)
    }

    /// The average wait from enqueue to start of the jobs' first runs.
    pub fn avg_wait_ms(&self) -> Option<i64> {
        (self.waited > 0).then(|| (self.wait_sum_ms as f64 / self.waited as f64).round() as i64)
    }

    /// Attempts per minute since [`recent_start`] (a span of 5 to 6 minutes).
    pub fn throughput_per_min(&self, now_ms: i64) -> f64 {
        let span = (now_ms - recent_start(now_ms)).max(1);
        self.finished_recent as f64 * 60_000.0 / span as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::execution_histogram::bucket_of;

    fn durations(pairs: &[(i64, i64)]) -> String {
        let mut counts = [0; BUCKETS];
        for (ms, n) in pairs {
            counts[bucket_of(*ms)] += n;
        }
        serde_json::to_string(&counts).unwrap()
    }

    #[test]
    fn a_window_sums_successes_and_failures_of_its_families() {
        let successes = [
            SuccessRow {
                family: "default".into(),
                succeeded: 8,
                succeeded_recent: 2,
                waited: 8,
                wait_sum_ms: 800,
                max_ms: 40,
                durations: durations(&[(3, 8)]),
            },
            SuccessRow {
                family: "low".into(),
                succeeded: 1,
                durations: durations(&[(3, 1)]),
                ..SuccessRow::default()
            },
        ];
        let failed = [
            FailedRow {
                family: "default".into(),
                outcome: "retrying".into(),
                bucket: bucket_of(40),
                count: 1,
                recent: 1,
                waited: 1,
                wait_sum_ms: 200,
                max_ms: 40,
            },
            FailedRow {
                family: "default".into(),
                outcome: "dead".into(),
                bucket: bucket_of(40),
                count: 1,
                max_ms: 40,
                ..FailedRow::default()
            },
        ];
        let w = Window::of(Some("default"), &successes, &failed);
        assert_eq!(
            (
                w.finished,
                w.succeeded,
                w.retried,
                w.dead,
                w.finished_recent
            ),
            (10, 8, 1, 1, 3)
        );
        assert_eq!(w.avg_wait_ms(), Some(111), "(800 + 200) / 9");
        assert_eq!(
            w.percentile_ms(50),
            Some(3),
            "rank 5 of 8 in (0, 5]: 5 * 5 / 8"
        );
        assert_eq!(
            w.percentile_ms(95),
            Some(40),
            "rank 10: the top of (25, 50], cut at the max"
        );
        assert_eq!(Window::of(None, &successes, &failed).finished, 11);
        assert_eq!(
            Window::of(Some("high"), &successes, &failed),
            Window::default()
        );
        assert_eq!(Window::default().avg_wait_ms(), None);
        assert_eq!(Window::default().percentile_ms(50), None);
    }

    #[test]
    fn throughput_is_per_minute_over_the_recent_span() {
        let w = Window {
            finished_recent: 330,
            ..Window::default()
        };
        // At 30 s past a minute, recent started 5 min 30 s ago.
        let now = 100 * 60_000 + 30_000;
        assert_eq!(recent_start(now), 95 * 60_000);
        assert_eq!(w.throughput_per_min(now), 60.0);
        assert_eq!(window_start(now), 40 * 60_000);
    }
}
