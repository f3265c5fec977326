//! Who may call and who sent what: bearer-token scopes, the audit actor, signed deliveries,
//! and the credentials a job's view does not show.

pub mod actor;
pub mod auth;
pub mod redaction;
pub mod signature;
