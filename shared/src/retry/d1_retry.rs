//! How long a message waits before it comes back when D1 itself failed (docs/app-guide.md
//! "Retries", D1 outages). The delay doubles with the queue's own delivery count up to a cap, so a
//! blip costs seconds while a long outage spends few of the queue's `max_retries`: with 100 retries
//! a message outlives about 23 hours of outage before the queue gives it up.

/// The delay after the first failed delivery.
pub const D1_RETRY_FIRST_SECS: u64 = 10;

/// The longest delay: also the most a message waits after D1 is back.
pub const D1_RETRY_MAX_SECS: u64 = 900;

/// The delay before the next delivery of a message the queue has delivered
/// `delivery_attempts` times (1 on the first delivery).
pub fn d1_retry_secs(delivery_attempts: u32) -> u64 {
    let doublings = delivery_attempts.saturating_sub(1).min(16);
    (D1_RETRY_FIRST_SECS << doublings).min(D1_RETRY_MAX_SECS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How long a message survives an outage when the queue retries it `max_retries` times.
    fn outage_outlived_secs(max_retries: u32) -> u64 {
        (1..=max_retries).map(d1_retry_secs).sum()
    }

    #[test]
    fn doubles_from_ten_seconds_up_to_fifteen_minutes() {
        let delays: Vec<u64> = (1..=9).map(d1_retry_secs).collect();
        assert_eq!(delays, [10, 20, 40, 80, 160, 320, 640, 900, 900]);
        assert_eq!(d1_retry_secs(0), 10, "a count the runtime did not give");
        assert_eq!(d1_retry_secs(u32::MAX), 900);
    }

    #[test]
    fn the_queues_retries_outlive_a_day_long_outage_nearly() {
        // consumer/wrangler.toml: max_retries = 100 on the job queues, 10 on the DLQs.
        assert_eq!(outage_outlived_secs(100), 84_970, "23.6 h, was 1,000 s");
        assert_eq!(outage_outlived_secs(10), 3_970, "66 min, was 600 s");
    }
}
