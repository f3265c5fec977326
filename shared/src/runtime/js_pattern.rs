//! The payload schemas' pattern engine on Workers (crate::job::payload_schema): the runtime's
//! own `RegExp`, which is the dialect JSON Schema names, so no regex engine ships in the WASM.

use wasm_bindgen::prelude::wasm_bindgen;

use crate::job::payload_schema::PatternEngine;

#[wasm_bindgen(module = "/src/runtime/js_pattern.js")]
extern "C" {
    /// Why `pattern` does not compile; empty when it does.
    #[wasm_bindgen(js_name = patternError)]
    fn pattern_error(pattern: &str) -> String;
    #[wasm_bindgen(js_name = patternMatches)]
    fn pattern_matches(pattern: &str, text: &str) -> bool;
}

pub const ENGINE: PatternEngine = PatternEngine {
    compiles: |pattern| match pattern_error(pattern) {
        why if why.is_empty() => Ok(()),
        why => Err(why),
    },
    matches: pattern_matches,
};
