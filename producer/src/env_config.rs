//! Reading vars and secrets: both are plain strings at runtime; unset and blank mean "absent".

use worker::Env;

pub fn string(env: &Env, name: &str) -> Option<String> {
    env.var(name)
        .ok()
        .map(|v| v.to_string())
        .filter(|v| !v.trim().is_empty())
}

/// Milliseconds since the Unix epoch, from the runtime's clock.
pub fn now_ms() -> i64 {
    worker::Date::now().as_millis() as i64
}
