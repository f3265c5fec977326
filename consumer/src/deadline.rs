//! A deadline on any future: what bounds each fetch, the browser session's socket reads and each
//! job as a whole.

use std::future::Future;
use std::time::Duration;

use futures::future::{select, Either};
use worker::Delay;

/// `future`'s output, or `None` when `ms` milliseconds pass first (it is then dropped).
pub async fn within<T>(ms: u64, future: impl Future<Output = T>) -> Option<T> {
    let timer = Delay::from(Duration::from_millis(ms));
    match select(Box::pin(future), Box::pin(timer)).await {
        Either::Left((output, _)) => Some(output),
        Either::Right(_) => None,
    }
}
