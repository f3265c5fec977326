//! The time-zone database (shared `TimeZones`) for schedules that name a zone: the build writes
//! it beside the static files (`tz.bin`, docs/operating.md "Cron expressions"), and the producer
//! reads it through the STATIC binding the first time a schedule names a zone, then keeps it for
//! the isolate. Not compiled in, it costs the Worker's WASM, and so every cold start, nothing.

use jobs_shared::runtime::faults;
use std::cell::RefCell;
use std::rc::Rc;

use jobs_shared::request::api_error::ApiError;
use jobs_shared::schedule::cron_schedule::names_zone;
use jobs_shared::schedule::time_zones::TimeZones;
use worker::Env;

use crate::static_files;

/// The database if the expression it was loaded for names a zone.
pub struct Loaded(Option<Rc<Vec<u8>>>);

impl Loaded {
    pub fn zones(&self) -> Option<TimeZones<'_>> {
        self.0
            .as_deref()
            .and_then(|blob| TimeZones::from_blob(blob))
    }
}

thread_local! {
    static DATABASE: RefCell<Option<Rc<Vec<u8>>>> = const { RefCell::new(None) };
}

/// What parsing `expression` needs: the database when it names a zone, read once per isolate
/// (503 when it cannot be read), else nothing.
pub async fn load_for(env: &Env, expression: &str) -> Result<Loaded, ApiError> {
    if !names_zone(expression) {
        return Ok(Loaded(None));
    }
    if let Some(blob) = DATABASE.with(|d| d.borrow().clone()) {
        return Ok(Loaded(Some(blob)));
    }
    let blob = static_files::bytes(env, "tz.bin").await?;
    if TimeZones::from_blob(&blob).is_none() {
        return Err(faults::internal(&"tz.bin is not a time-zone database"));
    }
    let blob = Rc::new(blob);
    DATABASE.with(|d| *d.borrow_mut() = Some(blob.clone()));
    Ok(Loaded(Some(blob)))
}
