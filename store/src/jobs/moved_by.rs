//! Who moved a job by hand, for the statements that say so (an operator's move, an app's
//! cancel: crate::jobs::operator, crate::jobs::chain).

use jobs_shared::job::lease::{CANCELLED_BY_APP_ATTEMPT, SKIPPED_ATTEMPT};

/// Who moved a job by hand: what its chain's error and a run the move ended say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MovedBy {
    /// An operator: the admin API, the dashboard, the CLI.
    Operator,
    /// The app that enqueued it, cancelling its own job (docs/app-guide.md "Cancel from the
    /// app").
    App,
}

impl MovedBy {
    /// Who, as a chain's error names them ("step 2 (http) was cancelled by its app").
    pub fn who(self) -> &'static str {
        match self {
            MovedBy::Operator => "an operator",
            MovedBy::App => "its app",
        }
    }

    /// The run record's message of an attempt the move ended while it ran.
    pub(super) fn ended_attempt(self) -> &'static str {
        match self {
            MovedBy::Operator => SKIPPED_ATTEMPT,
            MovedBy::App => CANCELLED_BY_APP_ATTEMPT,
        }
    }
}
