//! A job read back to be sent (the sweep's re-sends and releases, a resume).

use jobs_shared::runtime::queue_send::Stored;
use serde::Deserialize;

/// A job read back to be sent: what its message and delay need (columns `id`, `type AS
/// job_type`, `family`, `priority`, `run_at`, `correlation_id`).
#[derive(Clone, Deserialize)]
pub struct Unsent {
    pub id: String,
    pub job_type: String,
    pub family: String,
    /// Picks the family's lane.
    pub priority: i64,
    pub run_at: i64,
    /// Carried in the message (the consumer reads the column too).
    pub correlation_id: Option<String>,
}

impl Unsent {
    /// What its message and queue need.
    pub fn stored(&self) -> Stored<'_> {
        let cid = self.correlation_id.as_deref();
        Stored::new(&self.id, &self.job_type, &self.family, self.priority, cid)
    }
}
