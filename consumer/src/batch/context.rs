//! What every stage of one batch runs with.

use jobs_shared::job::lease::ConsumerLimits;
use worker::{D1Database, Env};

use super::claim::Terms;
use crate::invocation::Invocation;

/// The batch's bindings, invocation, settings and terms: what every stage runs with.
pub struct BatchContext<'a> {
    pub db: &'a D1Database,
    pub env: &'a Env,
    pub invocation: &'a Invocation,
    pub limits: &'a ConsumerLimits,
    pub terms: &'a Terms,
}
