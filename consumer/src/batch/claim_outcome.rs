//! Stage 2: what the claim made of each message. One [`ClaimOutcome`] per message, worked out
//! without I/O ([`classify`]); then [`sort`] ends at once the messages that need nothing more
//! (a paused, expired or duplicate job's), and sorts the rest into the jobs to run, the dead to
//! dead-letter and the messages that claimed nothing.

use std::collections::{HashMap, HashSet};

use jobs_shared::job::envelope::JobMessage;
use jobs_shared::job::family::Family;
use jobs_store::jobs::{Claim, Claimed, Exhausted, PastExpiry};

use crate::delivery::Delivery;
use crate::job_events;

/// What the claim made of one message's job.
pub enum ClaimOutcome<'c> {
    /// Claimed: this batch runs it.
    Claimed(&'c Claimed),
    /// A pause covers it: kept in D1 without spending an attempt; the resume re-sends it.
    Paused,
    /// Its last attempt was lost with its lease: dead now, and dead-lettered.
    Exhausted(&'c Exhausted),
    /// Past its `expires_at`: skipped, never run.
    Expired(&'c PastExpiry),
    /// A second message for a job an earlier message of this batch claimed.
    Duplicate,
    /// Nothing: why is read in the record's round trip (stage 4).
    Unclaimed,
}

/// Each message's outcome, in order; `ids` are the messages' job ids. A job is claimed by its
/// first message only.
pub fn classify<'c>(ids: &[&str], claim: &'c Claim) -> Vec<ClaimOutcome<'c>> {
    let mut claimed: HashMap<&str, &Claimed> =
        claim.claimed.iter().map(|c| (c.id.as_str(), c)).collect();
    let held: HashSet<&str> = claim.held.iter().map(|h| h.id.as_str()).collect();
    let exhausted: HashMap<&str, &Exhausted> =
        claim.exhausted.iter().map(|e| (e.id.as_str(), e)).collect();
    let expired: HashMap<&str, &PastExpiry> = (claim.expired.iter())
        .map(|e| (e.job.id.as_str(), e))
        .collect();
    let mut started: HashSet<&str> = HashSet::new();
    ids.iter()
        .map(|&id| match claimed.remove(id) {
            Some(job) => {
                started.insert(id);
                ClaimOutcome::Claimed(job)
            }
            None if held.contains(id) => ClaimOutcome::Paused,
            None => match (exhausted.get(id), expired.get(id)) {
                (Some(job), _) => ClaimOutcome::Exhausted(job),
                (None, Some(job)) => ClaimOutcome::Expired(job),
                (None, None) if started.contains(id) => ClaimOutcome::Duplicate,
                (None, None) => ClaimOutcome::Unclaimed,
            },
        })
        .collect()
}

/// The batch's messages after the claim, but for those already ended.
#[derive(Default)]
pub struct Sorted<'a> {
    /// The jobs this batch runs, with their messages.
    pub runs: Vec<(&'a Delivery, &'a Claimed)>,
    /// Messages whose job the claim found dead, with the DLQ's message for each.
    pub dead: Vec<(&'a Delivery, JobMessage)>,
    /// Messages that claimed nothing.
    pub unclaimed: Vec<&'a Delivery>,
}

/// Sorts `valid` by their outcomes, acking (and logging) the paused, expired and duplicate.
pub fn sort<'a>(family: Family, valid: &[&'a Delivery], claim: &'a Claim) -> Sorted<'a> {
    let ids: Vec<&str> = valid
        .iter()
        .map(|d| d.job_id().unwrap_or_default())
        .collect();
    let mut sorted = Sorted::default();
    for (&delivery, outcome) in valid.iter().zip(classify(&ids, claim)) {
        match outcome {
            ClaimOutcome::Claimed(job) => sorted.runs.push((delivery, job)),
            ClaimOutcome::Paused => {
                job_events::skipped(delivery, family, "paused", None);
                delivery.ack()
            }
            ClaimOutcome::Exhausted(job) => {
                job_events::exhausted_on_claim(family, job);
                let cid = job.correlation_id.as_deref();
                let message = JobMessage::stored(&job.id, &job.job_type, cid);
                sorted.dead.push((delivery, message));
            }
            ClaimOutcome::Expired(job) => {
                job_events::expired_on_claim(family, job);
                delivery.ack()
            }
            ClaimOutcome::Duplicate => {
                job_events::skipped(delivery, family, "duplicate", None);
                delivery.ack()
            }
            ClaimOutcome::Unclaimed => sorted.unclaimed.push(delivery),
        }
    }
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::fate::tests::claimed;
    use jobs_store::jobs::Held;

    fn ended(id: &str) -> Exhausted {
        Exhausted {
            id: id.into(),
            job_type: "noop".into(),
            attempts: 3,
            correlation_id: None,
            chain: Default::default(),
        }
    }

    /// Each outcome as (kind, the job id it carries).
    fn labels(outcomes: &[ClaimOutcome<'_>]) -> Vec<(&'static str, String)> {
        let label = |o: &ClaimOutcome<'_>| match o {
            ClaimOutcome::Claimed(job) => ("claimed", job.id.clone()),
            ClaimOutcome::Paused => ("paused", String::new()),
            ClaimOutcome::Exhausted(job) => ("exhausted", job.id.clone()),
            ClaimOutcome::Expired(e) => ("expired", e.job.id.clone()),
            ClaimOutcome::Duplicate => ("duplicate", String::new()),
            ClaimOutcome::Unclaimed => ("unclaimed", String::new()),
        };
        outcomes.iter().map(label).collect()
    }

    fn expect(list: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
        list.iter().map(|(k, id)| (*k, id.to_string())).collect()
    }

    #[test]
    fn each_message_gets_its_own_outcome_in_order() {
        let claim = Claim {
            claimed: vec![claimed("run")],
            held: vec![Held {
                id: "paused".into(),
            }],
            exhausted: vec![ended("lost")],
            expired: vec![PastExpiry {
                job: ended("late"),
                expires_at: 1,
            }],
        };
        let ids = ["late", "run", "nothing", "paused", "lost"];
        assert_eq!(
            labels(&classify(&ids, &claim)),
            expect(&[
                ("expired", "late"),
                ("claimed", "run"),
                ("unclaimed", ""),
                ("paused", ""),
                ("exhausted", "lost"),
            ])
        );
    }

    #[test]
    fn a_job_is_claimed_by_its_first_message_and_its_others_are_duplicates() {
        let claim = Claim {
            claimed: vec![claimed("a")],
            ..Claim::default()
        };
        assert_eq!(
            labels(&classify(&["a", "b", "a", "a"], &claim)),
            expect(&[
                ("claimed", "a"),
                ("unclaimed", ""),
                ("duplicate", ""),
                ("duplicate", ""),
            ])
        );
    }

    #[test]
    fn an_empty_claim_leaves_every_message_unclaimed() {
        assert_eq!(
            labels(&classify(&["a", "b"], &Claim::default())),
            expect(&[("unclaimed", ""), ("unclaimed", "")])
        );
    }
}
