//! The Workers' clock (feature `workers`).

/// Milliseconds since the Unix epoch: `Date.now()`, one call and a number. (`worker::Date::now`
/// builds a JS `Date` object and reads it back, two calls and an allocation, and the consumer
/// reads the clock several times per job.)
pub fn now_ms() -> i64 {
    worker::js_sys::Date::now() as i64
}
