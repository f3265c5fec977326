//! A Worker's vars and secrets (feature `workers`): both are plain strings at run time, and
//! unset and blank both mean absent.

use worker::Env;

/// The var or secret `name`; `None` when unset or blank.
pub fn string(env: &Env, name: &str) -> Option<String> {
    env.var(name)
        .ok()
        .map(|v| v.to_string())
        .filter(|v| !v.trim().is_empty())
}
