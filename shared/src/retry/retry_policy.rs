//! How long to wait before the next attempt, and whether a queue can carry that wait.

use crate::util::config_var::int_var;

/// The longest any retry waits (docs/app-guide.md "Retries"): a policy's backoff and a server's
/// `Retry-After` alike are cut here, so no answer and no attempt count parks a job for good.
/// 30 h sits above the crawler policy's longest wait (its 24 h cap plus 20 % jitter, 28.8 h),
/// which keeps that policy whole.
pub const MAX_RETRY_DELAY_SECS: u64 = 108_000;

/// A retry backoff. Randomness comes in as `unit` in [0, 1) so the policy stays
/// pure and testable; it maps linearly onto the jitter range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RetryPolicy {
    /// `base x 2^(n-1) x j`, `j` uniform in `[jitter_min, jitter_max]`, no cap.
    Exponential {
        base_secs: u32,
        jitter_min: f64,
        jitter_max: f64,
    },
    /// `min(base x 2^(n-1), cap) x j`, `j` uniform in `[1 - jitter, 1 + jitter]`.
    /// Jitter applies after the cap, so capped delays still spread out.
    ExponentialCapped {
        base_secs: u32,
        cap_secs: u32,
        jitter: f64,
    },
    /// `table[n-1]`; past the end, the last entry repeats.
    Fixed(FixedTable),
}

/// The most entries a fixed table holds.
pub const MAX_FIXED_ENTRIES: usize = 10;

/// A fixed table of delays in seconds, held by value so a policy read from a job's row is as
/// cheap to pass around as the built-in ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedTable {
    secs: [u32; MAX_FIXED_ENTRIES],
    len: u8,
}

impl FixedTable {
    /// The first [`MAX_FIXED_ENTRIES`] of `secs`.
    pub const fn new(secs: &[u32]) -> FixedTable {
        let mut table = [0; MAX_FIXED_ENTRIES];
        let mut len = 0;
        while len < secs.len() && len < MAX_FIXED_ENTRIES {
            table[len] = secs[len];
            len += 1;
        }
        FixedTable {
            secs: table,
            len: len as u8,
        }
    }

    pub fn as_slice(&self) -> &[u32] {
        &self.secs[..usize::from(self.len)]
    }
}

impl RetryPolicy {
    /// The default: exponential from 30 s, each delay jittered by x0.75-1.25 (docs/app-guide.md
    /// "Retries").
    pub const DEFAULT: RetryPolicy = RetryPolicy::Exponential {
        base_secs: 30,
        jitter_min: 0.75,
        jitter_max: 1.25,
    };

    /// For crawlers of rate-limited sites: 1 min doubling, capped at 24 h, +-20 %.
    pub const CRAWLER: RetryPolicy = RetryPolicy::ExponentialCapped {
        base_secs: 60,
        cap_secs: 86_400,
        jitter: 0.2,
    };

    /// A fixed table, as LLM calls use: 30 s, 2 min, 10 min.
    pub const FIXED_TABLE: RetryPolicy = RetryPolicy::Fixed(FixedTable::new(&[30, 120, 600]));

    /// Delay before the next attempt after attempt `failed_attempt` (1-indexed) failed.
    ///
    /// The exponent is `attempt - 1`, so the first retry waits one base, jittered: the
    /// default's attempt 1 is 23-38 s ... attempt 5 360-600 s, the crawler's attempt 1 48-72 s
    /// (docs/app-guide.md "Retries").
    /// Results are rounded to whole seconds and never exceed [`MAX_RETRY_DELAY_SECS`].
    pub fn delay_secs(&self, failed_attempt: u32, unit: f64) -> u64 {
        let delay = match *self {
            RetryPolicy::Exponential {
                base_secs,
                jitter_min,
                jitter_max,
            } => jittered(
                doubled(base_secs, failed_attempt),
                jitter_min,
                jitter_max,
                unit,
            ),
            RetryPolicy::ExponentialCapped {
                base_secs,
                cap_secs,
                jitter,
            } => {
                let capped = doubled(base_secs, failed_attempt).min(f64::from(cap_secs));
                jittered(capped, 1.0 - jitter, 1.0 + jitter, unit)
            }
            RetryPolicy::Fixed(table) => {
                let index = (failed_attempt.max(1) - 1) as usize;
                let table = table.as_slice();
                table
                    .get(index)
                    .or(table.last())
                    .copied()
                    .map_or(0, u64::from)
            }
        };
        delay.min(MAX_RETRY_DELAY_SECS)
    }
}

/// `base x 2^(n-1)` in f64: exact while it matters (below 2^53 s), and it
/// overflows to infinity rather than wrapping, so jitter is applied before the
/// result saturates and delays stay monotone in the attempt.
fn doubled(base_secs: u32, failed_attempt: u32) -> f64 {
    let exponent = i32::try_from(failed_attempt.saturating_sub(1)).unwrap_or(i32::MAX);
    f64::from(base_secs) * 2f64.powi(exponent)
}

/// `secs` scaled by the point `unit` of the way from `min` to `max`, in whole seconds.
fn jittered(secs: f64, min: f64, max: f64, unit: f64) -> u64 {
    let factor = min + (max - min) * unit.clamp(0.0, 1.0);
    // `as` saturates at u64::MAX (and maps NaN to 0): no overflow, no panic.
    (secs * factor).round() as u64
}

/// The longest `delaySeconds` a message is sent or retried with: the var `QUEUE_MAX_DELAY_SECS`,
/// 1 to 86,400 (default 43,200, the 12 h of Cloudflare Queues' limits page; newer pages say
/// 24 h, so a deployment may raise it to what its account allows). Both Workers read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueDelayLimit(u32);

impl QueueDelayLimit {
    pub const DEFAULT: QueueDelayLimit = QueueDelayLimit(43_200);
    /// 24 h: no Queues limits page allows more.
    const MAX_SECS: i64 = 86_400;
    const VAR: &'static str = "QUEUE_MAX_DELAY_SECS";

    /// Reads the var through `var`; an unset or blank one is the default, and a value that is
    /// not a whole number from 1 to 86,400 is too, with a warning to log.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> (QueueDelayLimit, Vec<String>) {
        let mut warnings = Vec::new();
        let default = format!("the default {}", Self::DEFAULT.secs());
        let limit = int_var(
            Self::VAR,
            var(Self::VAR),
            Self::MAX_SECS,
            default,
            &mut warnings,
        )
        .map_or(Self::DEFAULT, |secs| QueueDelayLimit(secs as u32));
        (limit, warnings)
    }

    pub fn secs(self) -> u32 {
        self.0
    }
}

/// How the next delivery of a job reaches its queue: the plan the enqueue and the retry follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryPlan {
    /// Send (or retry) the message now with this queue-side delay.
    Send { delay_secs: u32 },
    /// Too far out for a queue delay: send it later, keeping the job in D1 until `until_ms`,
    /// when the maintenance sweep sends it.
    SendLater { until_ms: i64 },
}

/// Delivery for a job due `delay_secs` from `now_ms`.
pub fn plan_delivery(delay_secs: u64, now_ms: i64, limit: QueueDelayLimit) -> DeliveryPlan {
    let delay_ms = i64::try_from(delay_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
    plan_delivery_at(now_ms.saturating_add(delay_ms), now_ms, limit)
}

/// Delivery for a job due at `run_at_ms`. A past `run_at_ms` is due now; a queue
/// delay rounds up to whole seconds so the job never runs early, while a send later keeps
/// the exact due time.
pub fn plan_delivery_at(run_at_ms: i64, now_ms: i64, limit: QueueDelayLimit) -> DeliveryPlan {
    let wait_ms = u64::try_from(run_at_ms.saturating_sub(now_ms)).unwrap_or(0);
    let delay_secs = wait_ms.div_ceil(1000);
    if delay_secs <= u64::from(limit.secs()) {
        DeliveryPlan::Send {
            delay_secs: delay_secs as u32,
        }
    } else {
        DeliveryPlan::SendLater {
            until_ms: run_at_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Lowest and highest delay for `n`: the ends of the jitter range.
    fn range(policy: RetryPolicy, n: u32) -> (u64, u64) {
        (policy.delay_secs(n, 0.0), policy.delay_secs(n, 1.0))
    }

    #[test]
    fn default_matches_its_worked_examples() {
        let p = RetryPolicy::DEFAULT;
        assert_eq!(range(p, 1), (23, 38));
        assert_eq!(p.delay_secs(1, 0.5), 30);
        assert_eq!(range(p, 2), (45, 75));
        assert_eq!(range(p, 3), (90, 150));
        assert_eq!(range(p, 4), (180, 300));
        assert_eq!(range(p, 5), (360, 600));
    }

    #[test]
    fn crawler_matches_its_table() {
        let p = RetryPolicy::CRAWLER;
        assert_eq!(range(p, 1), (48, 72));
        assert_eq!(range(p, 2), (96, 144));
        assert_eq!(range(p, 5), (768, 1152));
        assert_eq!(p.delay_secs(5, 0.5), 960);
        // 60 x 2^11 = 122,880 s is past the cap: 24 h +- 20 % = 19.2 h .. 28.8 h.
        assert_eq!(range(p, 12), (69_120, 103_680));
        assert_eq!(range(p, 20), (69_120, 103_680));
    }

    #[test]
    fn fixed_table_then_its_last_entry() {
        let p = RetryPolicy::FIXED_TABLE;
        let delays: Vec<_> = (1..=5).map(|n| p.delay_secs(n, 0.9)).collect();
        assert_eq!(delays, [30, 120, 600, 600, 600]);
        assert_eq!(
            RetryPolicy::Fixed(FixedTable::new(&[])).delay_secs(1, 0.5),
            0
        );
    }

    #[test]
    fn huge_attempts_stop_at_the_retry_cap() {
        let cap = MAX_RETRY_DELAY_SECS;
        assert_eq!(RetryPolicy::DEFAULT.delay_secs(1000, 0.5), cap);
        assert_eq!(RetryPolicy::DEFAULT.delay_secs(u32::MAX, 0.0), cap);
        // 30 x 2^12 x 1.25 = 153,600 s: the first default delay past the cap.
        assert_eq!(RetryPolicy::DEFAULT.delay_secs(13, 1.0), cap);
        assert_eq!(RetryPolicy::DEFAULT.delay_secs(12, 1.0), 76_800);
        // The crawler policy's own cap (24 h +- 20 %) stays whole below it.
        assert_eq!(range(RetryPolicy::CRAWLER, 1000), (69_120, 103_680));
        assert_eq!(RetryPolicy::FIXED_TABLE.delay_secs(1000, 0.5), 600);
        assert_eq!(
            RetryPolicy::Fixed(FixedTable::new(&[u32::MAX])).delay_secs(1, 0.5),
            cap
        );
        let huge = RetryPolicy::Exponential {
            base_secs: u32::MAX,
            jitter_min: 1.0,
            jitter_max: 1.0,
        };
        assert_eq!(huge.delay_secs(1, 0.5), cap);
        // Attempt 0 is not a real failed attempt; treat it like the first.
        assert_eq!(RetryPolicy::DEFAULT.delay_secs(0, 0.5), 30);
    }

    #[test]
    fn plan_delivery_sends_within_the_queue_limit() {
        let now = 1_700_000_000_000;
        let limit = |secs: &str| QueueDelayLimit::from_vars(|_| Some(secs.into())).0;
        let (default, minute, day) = (QueueDelayLimit::DEFAULT, limit("60"), limit("86400"));
        let send = |delay_secs| DeliveryPlan::Send { delay_secs };
        let hold = |secs: i64| DeliveryPlan::SendLater {
            until_ms: now + secs * 1000,
        };
        let cases = [
            (default, 0, send(0)),
            (default, 43_200, send(43_200)),
            (default, 43_201, hold(43_201)),
            (
                default,
                u64::MAX,
                DeliveryPlan::SendLater { until_ms: i64::MAX },
            ),
            (minute, 60, send(60)),
            (minute, 120, hold(120)),
            (day, 86_400, send(86_400)),
            (day, 86_401, hold(86_401)),
        ];
        for (limit, delay, expected) in cases {
            let planned = plan_delivery(delay, now, limit);
            assert_eq!(planned, expected, "{limit:?} {delay}");
        }
    }

    #[test]
    fn queue_delay_limit_var_defaults_and_bounds() {
        let read = |value: Option<&str>| {
            QueueDelayLimit::from_vars(|name| {
                assert_eq!(name, "QUEUE_MAX_DELAY_SECS");
                value.map(String::from)
            })
        };
        assert_eq!(read(None), (QueueDelayLimit::DEFAULT, vec![]));
        assert_eq!(read(Some(" ")), (QueueDelayLimit::DEFAULT, vec![]));
        assert_eq!(QueueDelayLimit::DEFAULT.secs(), 43_200);
        assert_eq!(read(Some("1")).0.secs(), 1);
        assert_eq!(read(Some(" 86400 ")).0.secs(), 86_400);
        for bad in ["0", "86401", "-5", "12h", "1e3"] {
            let (limit, warnings) = read(Some(bad));
            assert_eq!(limit, QueueDelayLimit::DEFAULT, "{bad}");
            assert_eq!(warnings.len(), 1, "{bad}");
            assert!(
                warnings[0].starts_with("QUEUE_MAX_DELAY_SECS=") && warnings[0].ends_with("43200"),
                "{warnings:?}"
            );
        }
    }

    #[test]
    fn plan_delivery_at_rounds_up_and_keeps_the_exact_hold_time() {
        let now = 1_000_000;
        let limit = QueueDelayLimit::DEFAULT;
        assert_eq!(
            plan_delivery_at(now - 5, now, limit),
            DeliveryPlan::Send { delay_secs: 0 }
        );
        assert_eq!(
            plan_delivery_at(now + 1, now, limit),
            DeliveryPlan::Send { delay_secs: 1 }
        );
        assert_eq!(
            plan_delivery_at(now + 1000, now, limit),
            DeliveryPlan::Send { delay_secs: 1 }
        );
        let far = now + 43_200_001;
        assert_eq!(
            plan_delivery_at(far, now, limit),
            DeliveryPlan::SendLater { until_ms: far }
        );
    }

    fn policies() -> impl Strategy<Value = RetryPolicy> {
        prop_oneof![
            Just(RetryPolicy::DEFAULT),
            Just(RetryPolicy::CRAWLER),
            Just(RetryPolicy::FIXED_TABLE),
        ]
    }

    /// Inclusive bounds a policy promises for attempt `n`, computed independently.
    fn bounds(policy: RetryPolicy, n: u32) -> (f64, f64) {
        let exp = 2f64.powi(n as i32 - 1);
        match policy {
            RetryPolicy::Exponential {
                base_secs,
                jitter_min,
                jitter_max,
            } => (
                base_secs as f64 * exp * jitter_min,
                base_secs as f64 * exp * jitter_max,
            ),
            RetryPolicy::ExponentialCapped {
                base_secs,
                cap_secs,
                jitter,
            } => {
                let base = (base_secs as f64 * exp).min(cap_secs as f64);
                (base * (1.0 - jitter), base * (1.0 + jitter))
            }
            RetryPolicy::Fixed(table) => {
                let table = table.as_slice();
                let v = table[(n as usize - 1).min(table.len() - 1)] as f64;
                (v, v)
            }
        }
    }

    proptest! {
        #[test]
        fn delay_stays_within_its_bounds(policy in policies(), n in 1u32..=64, unit in 0.0f64..1.0) {
            let (lo, hi) = bounds(policy, n);
            let (lo, hi) = (lo.min(u64::MAX as f64), hi.min(u64::MAX as f64));
            let d = policy.delay_secs(n, unit) as f64;
            // Rounding to whole seconds moves a delay by at most half a second;
            // beyond 2^53 f64 itself is coarser, so compare relatively there.
            let slack = 0.5f64.max(hi * 1e-12);
            let cap = MAX_RETRY_DELAY_SECS as f64;
            let (lo, hi) = (lo.min(cap), hi.min(cap));
            prop_assert!(d >= lo - slack && d <= hi + slack, "{policy:?} n={n} d={d} not in [{lo}, {hi}]");
        }

        #[test]
        fn no_policy_waits_past_the_cap(
            base_secs in any::<u32>(),
            table in proptest::collection::vec(any::<u32>(), 1..5),
            n in any::<u32>(),
            unit in 0.0f64..1.0,
        ) {
            let table = FixedTable::new(&table);
            let policies = [
                RetryPolicy::Exponential { base_secs, jitter_min: 0.75, jitter_max: 1.25 },
                RetryPolicy::ExponentialCapped { base_secs, cap_secs: u32::MAX, jitter: 0.2 },
                RetryPolicy::Fixed(table),
            ];
            for policy in policies {
                prop_assert!(policy.delay_secs(n, unit) <= MAX_RETRY_DELAY_SECS, "{policy:?} n={n}");
            }
        }

        #[test]
        fn delay_never_decreases_with_attempts(policy in policies(), n in 1u32..=64, unit in 0.0f64..1.0) {
            prop_assert!(policy.delay_secs(n + 1, unit) >= policy.delay_secs(n, unit));
        }

        #[test]
        fn plan_delivery_never_sends_past_the_limit(
            delay in any::<u64>(),
            now in 0i64..4_102_444_800_000,
            secs in 1u32..=86_400,
        ) {
            let (limit, _) = QueueDelayLimit::from_vars(|_| Some(secs.to_string()));
            prop_assert_eq!(limit.secs(), secs);
            match plan_delivery(delay, now, limit) {
                DeliveryPlan::Send { delay_secs } => {
                    prop_assert!(delay_secs <= secs);
                    prop_assert_eq!(u64::from(delay_secs), delay);
                }
                DeliveryPlan::SendLater { until_ms } => {
                    prop_assert!(delay > u64::from(secs));
                    prop_assert!(until_ms > now);
                }
            }
        }
    }
}
