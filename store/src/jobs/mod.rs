//! The `jobs` table, one file per part of a job's life: written (`insert`), claimed and kept
//! (`claim`), its attempt recorded (`outcome`) or its lost attempt rescued (`rescue`), its
//! chain moved (`chain`), read (`read`, `counts`), moved by an operator (`operator`), held by a
//! pause (`held`), put back by a DLQ arrival (`arrivals`), and kept moving by the sweep
//! (`sweep`, `escalation`). The Workers call the functions re-exported here.

mod arrivals;
mod callback;
mod chain;
mod claim;
mod counts;
mod escalation;
mod group;
mod held;
mod indexes;
mod insert;
mod moved_by;
mod operator;
mod outcome;
mod read;
mod rescue;
mod sweep;
mod unsent;
mod wait;

pub use arrivals::job_settle_dlq_arrivals;
pub use chain::{job_list_chain_steps, ChainStep, ChainWrite, FailedChain};
pub use claim::{
    job_claim, job_extend_leases, Claim, ClaimTerms, Claimed, Exhausted, Held, PastExpiry, RunKey,
    Seen,
};
pub use counts::{
    job_count_backlog_by_family, job_count_by_family_and_status, job_count_running,
    job_count_running_by_family, CountRow, RunningRow,
};
pub use escalation::Digest;
pub use escalation::{
    job_claim_escalation, job_list_digest_lines, job_mark_digested, job_unclaim_digest,
    job_unclaim_escalation,
};
pub use group::{job_join_groups, job_list_branch_ends, Branch};
pub use held::job_release_held;
pub use insert::{job_insert_many, joined_rows, rows_json, Accepted, Written};
pub use moved_by::MovedBy;
pub use operator::{
    job_count_movable, job_move_many, job_move_one, job_set_priority, Changed, Conflict, Moved,
    OperatorMove,
};
pub use outcome::{job_set_outcome_many, Finished, Leftovers, Recorded};
pub use read::{job_get_by_id, job_list, JobRow, ListedRow, Page, SummaryRow};
pub use rescue::{job_list_expired, job_rescue_many, DeadStepChain, Expired, LostMove, Rescued};
pub use sweep::{
    job_age_priority, job_delete_finished, job_list_stranded, job_list_unsent, job_mark_sent,
    job_promote, job_schedule, Aged, Promotion,
};
pub use unsent::Unsent;
pub use wait::job_resume_waits;
