//! The `noop` type: does nothing and succeeds (benchmarks, tests of the pipeline itself).

use super::{HandlerRun, JobContext};

pub async fn run(_ctx: &JobContext<'_>) -> HandlerRun {
    HandlerRun::of(Ok(None))
}
