//! The one error shape of the HTTP API: `{"error": {"code", "message", "field"?}}`
//! with a fitting status, so clients branch on `code` and point at `field`.

use serde_json::{json, Value};
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    /// Stable, machine-readable (`invalid_payload`, `unauthorized`, ...).
    pub code: &'static str,
    pub message: String,
    /// Path of the offending input, e.g. `jobs[3].payload.url`.
    pub field: Option<String>,
}

impl ApiError {
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            field: None,
        }
    }

    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub fn body(&self) -> Value {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let Some(field) = &self.field {
            error["field"] = json!(field);
        }
        json!({ "error": error })
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.status, self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_without_field() {
        let e = ApiError::new(401, "unauthorized", "missing token");
        assert_eq!(
            e.body(),
            json!({"error": {"code": "unauthorized", "message": "missing token"}})
        );
        assert_eq!(e.to_string(), "401 unauthorized: missing token");
    }

    #[test]
    fn body_with_field() {
        let e = ApiError::new(422, "out_of_range", "too big").with_field("priority");
        assert_eq!(e.field.as_deref(), Some("priority"));
        assert_eq!(
            e.body(),
            json!({"error": {"code": "out_of_range", "message": "too big", "field": "priority"}})
        );
    }
}
