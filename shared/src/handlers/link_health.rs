//! Link health (the weekly `link_health_check` of the `links` table): what a check's
//! answer means, and how a link's state moves from one check to the next. A link is dead after
//! `dead_after` consecutive failures; one success makes it healthy again.

use serde::{Deserialize, Serialize};

/// Redirects followed per link before the check fails.
pub const MAX_REDIRECTS: u32 = 5;
/// Consecutive failures that make a link dead, unless the payload says otherwise.
pub const DEFAULT_DEAD_AFTER: u32 = 3;
/// Links checked at once by one job, unless the payload says otherwise.
pub const DEFAULT_LINK_CONCURRENCY: u32 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkStatus {
    Unknown,
    Ok,
    Failing,
    Dead,
}

impl LinkStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkStatus::Unknown => "unknown",
            LinkStatus::Ok => "ok",
            LinkStatus::Failing => "failing",
            LinkStatus::Dead => "dead",
        }
    }
}

/// What a HEAD answer asks for next.
pub fn head_refused(status: u16) -> bool {
    matches!(status, 405 | 501)
}

pub fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// A final (non-redirect) answer is healthy when 2xx.
pub fn healthy(status: u16) -> bool {
    (200..300).contains(&status)
}

/// A link's standing between checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct LinkState {
    pub consecutive_failures: u32,
    /// Start of the current failing streak (ms).
    pub first_failure_at: Option<i64>,
}

/// The state after one check (`ok` or not) at `now_ms`, and the status it gives the link.
pub fn after_check(
    prev: LinkState,
    ok: bool,
    now_ms: i64,
    dead_after: u32,
) -> (LinkState, LinkStatus) {
    if ok {
        return (LinkState::default(), LinkStatus::Ok);
    }
    let next = LinkState {
        consecutive_failures: prev.consecutive_failures.saturating_add(1),
        first_failure_at: prev.first_failure_at.or(Some(now_ms)),
    };
    let status = if next.consecutive_failures >= dead_after.max(1) {
        LinkStatus::Dead
    } else {
        LinkStatus::Failing
    };
    (next, status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_accumulate_to_dead_and_a_success_resets() {
        let mut state = LinkState::default();
        let mut statuses = Vec::new();
        for now in [10, 20, 30] {
            let (next, status) = after_check(state, false, now, 3);
            state = next;
            statuses.push(status);
        }
        assert_eq!(
            statuses,
            [LinkStatus::Failing, LinkStatus::Failing, LinkStatus::Dead]
        );
        assert_eq!(
            state,
            LinkState {
                consecutive_failures: 3,
                first_failure_at: Some(10)
            }
        );
        assert_eq!(
            after_check(state, true, 40, 3),
            (LinkState::default(), LinkStatus::Ok)
        );
        assert_eq!(
            after_check(LinkState::default(), false, 5, 1).1,
            LinkStatus::Dead
        );
        assert_eq!(
            after_check(LinkState::default(), false, 5, 0).1,
            LinkStatus::Dead
        );
    }

    #[test]
    fn answers() {
        assert!(head_refused(405) && head_refused(501) && !head_refused(404));
        assert!(is_redirect(301) && is_redirect(308) && !is_redirect(304) && !is_redirect(200));
        assert!(healthy(204) && !healthy(404) && !healthy(500) && !healthy(301));
    }
}
