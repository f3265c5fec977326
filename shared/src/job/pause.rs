//! Pausing a job type or a whole family. A paused job is not claimed (no attempt is spent): the
//! consumer acks its message and marks the job held (`jobs.held_at`), and resuming re-sends
//! every held job that no other pause still covers.

use crate::job::family::Family;
use crate::job::job_type::JobType;
use crate::request::api_error::ApiError;
use serde_json::Value;

/// What a pause covers: `type/<job type>` or `family/<family>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PauseTarget {
    pub kind: &'static str,
    pub name: String,
}

impl PauseTarget {
    /// Checks that the kind is `type` or `family` and the name is one the registry knows.
    pub fn parse(kind: &str, name: &str) -> Result<PauseTarget, ApiError> {
        let known = match kind {
            "type" => JobType::parse(name).map(|t| ("type", t.as_str())),
            "family" => Family::parse(name).map(|f| ("family", f.as_str())),
            _ => {
                return Err(
                    ApiError::new(422, "invalid_field", "kind must be type or family")
                        .with_field("kind"),
                )
            }
        };
        let (kind, name) = known.ok_or_else(|| {
            let message = match name {
                "" => format!("name is required: the {kind} to pause"),
                _ => format!("no {kind} named {name:?}"),
            };
            ApiError::new(422, "invalid_field", message).with_field("name")
        })?;
        Ok(PauseTarget {
            kind,
            name: name.to_string(),
        })
    }

    /// `{"kind", "name", "reason"?}`; the reason is free text up to 500 characters.
    pub fn from_body(body: &Value) -> Result<(PauseTarget, Option<String>), ApiError> {
        crate::request::field_error::only_fields(body, &["kind", "name", "reason"])?;
        let text = |field: &str| body.get(field).and_then(Value::as_str).unwrap_or_default();
        let target = PauseTarget::parse(text("kind"), text("name"))?;
        let reason = match body.get("reason") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.chars().count() <= 500 => Some(s.clone()),
            Some(_) => {
                return Err(ApiError::new(
                    422,
                    "invalid_field",
                    "reason must be text up to 500 characters",
                )
                .with_field("reason"))
            }
        };
        Ok((target, reason))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn targets_must_exist() {
        assert_eq!(
            PauseTarget::parse("family", "low").unwrap(),
            PauseTarget {
                kind: "family",
                name: "low".into()
            }
        );
        assert_eq!(PauseTarget::parse("type", "http").unwrap().kind, "type");
        let field = |k: &str, n: &str| PauseTarget::parse(k, n).unwrap_err().field.unwrap();
        assert_eq!(field("queue", "low"), "kind");
        assert_eq!(field("type", "low"), "name");
        assert_eq!(field("family", "http"), "name");
    }

    #[test]
    fn bodies() {
        let (t, reason) =
            PauseTarget::from_body(&json!({"kind": "type", "name": "noop", "reason": "deploy"}))
                .unwrap();
        assert_eq!(
            (t.name.as_str(), reason.as_deref()),
            ("noop", Some("deploy"))
        );
        let e = PauseTarget::from_body(&json!({"kind": "type", "name": "noop", "reason": 5}))
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("reason"));
        let e = PauseTarget::from_body(&json!({"kind": "type", "nam": "noop"})).unwrap_err();
        assert_eq!(e.code, "unknown_field");
    }
}
