//! The job state machine. Every allowed move is one row of `TRANSITIONS`, so
//! the producer, the consumer, the sweep and the admin API all agree on it.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Kept in D1 until due (a future `run_at`, or a wait beyond the queue delay limit).
    Scheduled,
    /// Sent to its queue, waiting for a consumer.
    Queued,
    /// Claimed by a consumer; an attempt is in progress.
    Running,
    /// An attempt failed and the next delivery is waiting out its backoff.
    Retrying,
    Succeeded,
    /// Attempts exhausted or a non-retryable error; only an operator revives it.
    Dead,
    Cancelled,
    /// Deliberately not run (expired, duplicate, blocked, budget hard stop).
    Skipped,
}

use JobStatus::*;

/// `(from, to)`: the only moves a job may make.
const TRANSITIONS: &[(JobStatus, JobStatus)] = &[
    (Scheduled, Queued),   // due: the sweep sends it
    (Queued, Running),     // a consumer claims it
    (Running, Succeeded),  //
    (Running, Retrying),   // a retryable failure with attempts left
    (Retrying, Running),   // the delayed redelivery is claimed
    (Running, Dead),       // attempts exhausted, or a non-retryable error
    (Queued, Dead),        // the queue gave up its message and it has no attempt left
    (Retrying, Dead),      // likewise (a DLQ arrival: delivery_exhausted)
    (Running, Queued),     // lease expired: the worker died, the sweep re-sends it
    (Retrying, Scheduled), // next delivery beyond the queue delay limit: kept in D1
    (Queued, Scheduled),   // likewise, e.g. an operator postpones it
    (Dead, Queued),        // operator retry or replay, never automatic
    (Retrying, Queued),    // operator retry: run it now, not after its backoff
    (Scheduled, Cancelled),
    (Queued, Cancelled),
    (Retrying, Cancelled),
    (Scheduled, Skipped),
    (Queued, Skipped),
    (Running, Skipped),
    (Retrying, Skipped),
];

impl JobStatus {
    pub const ALL: [JobStatus; 8] = [
        Scheduled, Queued, Running, Retrying, Succeeded, Dead, Cancelled, Skipped,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scheduled => "scheduled",
            Queued => "queued",
            Running => "running",
            Retrying => "retrying",
            Succeeded => "succeeded",
            Dead => "dead",
            Cancelled => "cancelled",
            Skipped => "skipped",
        }
    }

    pub fn parse(s: &str) -> Option<JobStatus> {
        JobStatus::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// A redelivered message of a job in a terminal state is acked without running.
    pub fn is_terminal(self) -> bool {
        matches!(self, Succeeded | Dead | Cancelled | Skipped)
    }

    pub fn is_live(self) -> bool {
        !self.is_terminal()
    }

    /// The live states: the ones a dedup key is held in and a DLQ arrival can still mark dead.
    pub fn live() -> Vec<JobStatus> {
        JobStatus::ALL.into_iter().filter(|s| s.is_live()).collect()
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

pub fn can_transition(from: JobStatus, to: JobStatus) -> bool {
    TRANSITIONS.contains(&(from, to))
}

/// A move the state machine forbids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IllegalTransition {
    pub from: JobStatus,
    pub to: JobStatus,
}

impl fmt::Display for IllegalTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot move a job from {} to {}", self.from, self.to)
    }
}

impl std::error::Error for IllegalTransition {}

pub fn transition(from: JobStatus, to: JobStatus) -> Result<JobStatus, IllegalTransition> {
    if can_transition(from, to) {
        Ok(to)
    } else {
        Err(IllegalTransition { from, to })
    }
}

/// The states that may move to `to`, in table order. Compare-and-set updates
/// use it for their `status IN (...)` guard, e.g. the consumer's claim of `Running`.
pub fn sources_of(to: JobStatus) -> Vec<JobStatus> {
    TRANSITIONS
        .iter()
        .filter(|&&(_, t)| t == to)
        .map(|&(from, _)| from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_round_trip() {
        for s in JobStatus::ALL {
            assert_eq!(JobStatus::parse(s.as_str()), Some(s));
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                serde_json::json!(s.as_str())
            );
        }
        assert_eq!(JobStatus::parse("failed"), None);
    }

    #[test]
    fn terminal_and_live_split_the_states() {
        let terminal: Vec<_> = JobStatus::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(terminal, [Succeeded, Dead, Cancelled, Skipped]);
        let live: Vec<_> = JobStatus::ALL.into_iter().filter(|s| s.is_live()).collect();
        assert_eq!(live, [Scheduled, Queued, Running, Retrying]);
    }

    #[test]
    fn the_happy_path_and_the_retry_loop() {
        let path = [Scheduled, Queued, Running, Retrying, Running, Succeeded];
        for pair in path.windows(2) {
            assert_eq!(transition(pair[0], pair[1]), Ok(pair[1]));
        }
    }

    #[test]
    fn design_rules() {
        assert!(can_transition(Dead, Queued));
        assert!(!can_transition(Cancelled, Queued));
        assert!(!can_transition(Succeeded, Queued));
        assert!(can_transition(Running, Queued));
        assert!(can_transition(Retrying, Scheduled));
        assert!(!can_transition(Running, Cancelled));
        assert!(!can_transition(Queued, Succeeded));
        for s in JobStatus::ALL {
            assert_eq!(can_transition(s, Skipped), s.is_live(), "{s} -> skipped");
            assert!(!can_transition(s, s), "{s} -> {s}");
        }
    }

    #[test]
    fn illegal_transition_explains_itself() {
        let err = transition(Succeeded, Running).unwrap_err();
        assert_eq!(
            err,
            IllegalTransition {
                from: Succeeded,
                to: Running
            }
        );
        assert_eq!(
            err.to_string(),
            "cannot move a job from succeeded to running"
        );
    }

    #[test]
    fn sources_of_lists_the_guard_states() {
        assert_eq!(sources_of(Running), [Queued, Retrying]);
        assert_eq!(sources_of(Queued), [Scheduled, Running, Dead, Retrying]);
        assert_eq!(sources_of(Cancelled), [Scheduled, Queued, Retrying]);
        assert_eq!(sources_of(Scheduled), [Retrying, Queued]);
        assert!(sources_of(Succeeded) == [Running]);
    }

    fn status() -> impl Strategy<Value = JobStatus> {
        proptest::sample::select(JobStatus::ALL.to_vec())
    }

    proptest! {
        #[test]
        fn transition_errs_exactly_when_not_allowed(from in status(), to in status()) {
            prop_assert_eq!(transition(from, to).is_ok(), can_transition(from, to));
            prop_assert_eq!(sources_of(to).contains(&from), can_transition(from, to));
        }

        #[test]
        fn terminal_states_only_leave_by_operator_retry(from in status(), to in status()) {
            if from.is_terminal() && can_transition(from, to) {
                prop_assert_eq!((from, to), (Dead, Queued));
            }
        }

        /// Walk random attempted moves from a fresh job: applying only the ones
        /// `transition` accepts never leaves the table's edges.
        #[test]
        fn random_walks_only_use_allowed_edges(moves in proptest::collection::vec(status(), 0..64)) {
            let mut current = Scheduled;
            for to in moves {
                match transition(current, to) {
                    Ok(next) => {
                        prop_assert!(TRANSITIONS.contains(&(current, next)));
                        current = next;
                    }
                    Err(err) => prop_assert_eq!(err, IllegalTransition { from: current, to }),
                }
            }
        }
    }
}
