//! Reading vars and secrets (shared `runtime::vars`), and a var meant as JSON.
//! The clock comes with them (shared `runtime::clock`), as the producer's handlers read both.

pub use jobs_shared::runtime::clock::now_ms;
pub use jobs_shared::runtime::vars::string;
use worker::Env;

/// A var as JSON text: a string var as it is, or an object var (a TOML table under `[vars]`)
/// serialized, so a var meant as JSON is read whichever way it was written.
pub fn json_text(env: &Env, name: &str) -> Option<String> {
    let value = worker::js_sys::Reflect::get(env, &name.into()).ok()?;
    let text = match value.as_string() {
        Some(text) => text,
        None if value.is_undefined() || value.is_null() => return None,
        None => worker::js_sys::JSON::stringify(&value).ok()?.as_string()?,
    };
    Some(text).filter(|v| !v.trim().is_empty())
}
