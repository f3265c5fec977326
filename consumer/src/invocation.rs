//! Who runs a queue batch: one id per consumer invocation, and the deployed version, so a run
//! record names the invocation that ran it and its `batch.completed` line (docs/app-guide.md "Run
//! records and artifacts").

use jobs_shared::job::ids::job_id;
use jobs_shared::job::run_details::found_by_consumer;
use jobs_shared::runtime::clock::now_ms;
use wasm_bindgen::JsValue;
use worker::js_sys::Reflect;
use worker::Env;

pub struct Invocation {
    /// A ULID minted when the invocation starts.
    pub id: String,
    /// The version id from the `CF_VERSION_METADATA` binding, else `local`.
    pub version: String,
}

impl Invocation {
    pub fn start(env: &Env) -> Invocation {
        let mut bytes = [0u8; 16];
        // Only uniqueness matters; without randomness the time part still tells invocations apart.
        let _ = getrandom::getrandom(&mut bytes);
        let version = Reflect::get(env, &JsValue::from_str("CF_VERSION_METADATA"))
            .and_then(|metadata| Reflect::get(&metadata, &JsValue::from_str("id")))
            .ok()
            .and_then(|id| id.as_string())
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| "local".into());
        Invocation {
            id: job_id(now_ms(), u128::from_le_bytes(bytes)),
            version,
        }
    }

    /// A lost attempt's details when this invocation's claim finds it.
    pub fn found_by(&self) -> String {
        found_by_consumer(&self.version, &self.id)
    }
}
