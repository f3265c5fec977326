//! Randomness from the runtime's CSPRNG: job ids, correlation ids and RSS source ids.

use jobs_shared::request::api_error::ApiError;

use jobs_shared::runtime::faults;

/// Sixteen random bytes; a CSPRNG failure is the platform's (503).
pub fn bytes() -> Result<[u8; 16], ApiError> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).map_err(|e| faults::internal(&e))?;
    Ok(bytes)
}
