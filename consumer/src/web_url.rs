//! URLs parsed and resolved by the runtime's own WHATWG parser (JS `URL`): the standard the
//! `url` crate implements, without that crate's parser and IDNA tables in the WASM.

use web_sys::Url;

/// `text` as an absolute URL; the error is "bad URL: " and the runtime's reason.
pub fn parse(text: &str) -> Result<Url, String> {
    Url::new(text).map_err(|e| {
        let reason = js_sys::Error::from(e).message();
        format!("bad URL: {}", String::from(reason))
    })
}

/// `reference` (a Location header, say) resolved against `base`.
pub fn join(base: &Url, reference: &str) -> Option<Url> {
    Url::new_with_base(reference, &base.href()).ok()
}
