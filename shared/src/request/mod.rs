//! What every request's checks share, below the domain that validates: the API's JSON error
//! naming the offending field, and decoding a body or a parameter into one.

pub mod api_error;
pub mod field_error;
