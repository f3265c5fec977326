//! Plain-Rust core of the job platform, shared by the producer and consumer Workers: the job
//! type registry, validation, the state machine, retry and error policy, auth and signing. No
//! Workers types, I/O, clock or RNG: time comes in as Unix ms and randomness as a unit float, so
//! everything here is tested natively and builds for `wasm32-unknown-unknown` alike. The one
//! exception is `runtime` (feature `workers`, which only the Workers enable): both Workers'
//! clock and their ways onto a queue, into Analytics Engine and across the JS boundary, kept
//! here so they are written once.
//!
//! Modules are grouped by concept into folders that form a stack (ARCHITECTURE.md "shared/
//! (jobs-shared): the domain"): a folder imports only the folders below it, and other crates
//! name what they use by its module path. The stack, bottom first (`tests/imports.test.mjs`
//! holds the code to it):
//!
//! stack: util < request < retry < budget < job < api < handlers < observe < schedule < security < runtime

pub mod api;
pub mod budget;
pub mod handlers;
pub mod job;
pub mod observe;
pub mod request;
pub mod retry;
#[cfg(feature = "workers")]
pub mod runtime;
pub mod schedule;
pub mod security;
pub mod util;
