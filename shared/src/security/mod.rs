//! Who may call and who sent what: bearer-token scopes, the audit actor, signed deliveries,
//! the credentials a job's view does not show, and the job types a token may use.

pub mod actor;
pub mod auth;
pub mod redaction;
pub mod signature;
pub mod type_fence;
