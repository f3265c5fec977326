//! Who may call and who sent what: bearer-token scopes, the audit actor and signed
//! deliveries.

pub mod actor;
pub mod auth;
pub mod signature;
