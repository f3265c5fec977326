//! Stage 1, the claim: every job of the batch moved to `running` under one lease, in one D1
//! round trip (store `jobs::job_claim`), on the batch's terms.

use jobs_shared::job::family::Family;
use jobs_shared::job::job_type::JobType;
use jobs_shared::job::lease;
use jobs_shared::observe::d1_stats::D1Stats;
use jobs_shared::runtime::clock::now_ms;
use jobs_store::jobs::{self, Claim, ClaimTerms};
use worker::D1Database;

use crate::delivery::Delivery;
use crate::invocation::Invocation;

/// What the batch claims under, fixed when it starts.
pub struct Terms {
    pub family: Family,
    /// When the batch started: the claim's clock, and where the invocation's wall time counts
    /// from.
    pub started_ms: i64,
    /// How long the batch's lease lasts: long enough for the longest deadline of its jobs'
    /// types (shared `lease::lease_ms`).
    pub lease_ms: i64,
    /// Who finds a lost attempt, on that attempt's run record.
    found_by: String,
}

impl Terms {
    pub fn claim(&self) -> ClaimTerms<'_> {
        ClaimTerms {
            family: self.family,
            now_ms: self.started_ms,
            lease_until: self.started_ms + self.lease_ms,
            found_by: &self.found_by,
        }
    }
}

/// The terms of a batch of `valid` messages (each holds a job) starting now.
pub fn terms(family: Family, valid: &[&Delivery], invocation: &Invocation) -> Terms {
    let types = valid
        .iter()
        .filter_map(|d| JobType::parse(&d.message.as_ref().ok()?.job_type));
    Terms {
        family,
        started_ms: now_ms(),
        lease_ms: lease::lease_ms(family, types),
        found_by: invocation.found_by(),
    }
}

pub async fn claim(
    db: &D1Database,
    valid: &[&Delivery],
    terms: &Terms,
    stats: &mut D1Stats,
) -> worker::Result<Claim> {
    let ids: Vec<&str> = valid.iter().filter_map(|d| d.job_id()).collect();
    jobs::job_claim(db, &ids, &terms.claim(), stats).await
}
