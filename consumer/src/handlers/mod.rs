//! The handlers: one module per registry row's handler (jobs_shared::job::registry), each
//! `pub async fn run(ctx: &JobContext<'_>) -> HandlerRun`. Built-in types run here; the rest
//! are forwarded to their app's endpoint (`forward`). The `mod` lines and the dispatch are
//! written by `consumer/build.rs` from the files in this folder, which it checks against the
//! registry: a row without a file, or a file without a row, does not compile.

use futures::future::LocalBoxFuture;

use crate::job_context::{HandlerRun, JobContext};

include!(concat!(env!("OUT_DIR"), "/handlers.rs"));
