//! Reading vars and secrets: both are plain strings at runtime; unset and blank mean "absent".
//! The clock comes with them (shared `util::clock`), as the producer's handlers read both.

pub use jobs_shared::util::clock::now_ms;
use worker::Env;

pub fn string(env: &Env, name: &str) -> Option<String> {
    env.var(name)
        .ok()
        .map(|v| v.to_string())
        .filter(|v| !v.trim().is_empty())
}
