//! A bulk action's body: which jobs (explicit ids, or a filter), and whether this is a dry run.
//! Bounded so one request cannot rewrite the whole table in one D1 batch.

use crate::api::job_filter::JobFilter;
use crate::request::api_error::ApiError;
use crate::request::field_error::only_fields;
use serde_json::Value;

/// Most jobs one bulk request moves; a larger filter moves the first page (stable order) and
/// says how many remain, so the operator repeats it.
pub const MAX_BULK: usize = 1000;

#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    Ids(Vec<String>),
    Filter(JobFilter),
}

#[derive(Clone, Debug, PartialEq)]
pub struct BulkRequest {
    pub selection: Selection,
    pub dry_run: bool,
}

impl BulkRequest {
    /// `{"ids": [...]}` or `{"filter": {...}}`, plus `"dry_run": bool`.
    pub fn parse(body: &Value) -> Result<BulkRequest, ApiError> {
        BulkRequest::parse_with(body, &[])
    }

    /// As [`BulkRequest::parse`], allowing the action's own fields `extra` too (e.g. the bulk
    /// set-status's `status`), which the caller reads.
    pub fn parse_with(body: &Value, extra: &[&str]) -> Result<BulkRequest, ApiError> {
        let allowed: Vec<&str> = ["ids", "filter", "dry_run"]
            .iter()
            .chain(extra)
            .copied()
            .collect();
        only_fields(body, &allowed)?;
        let dry_run = match body.get("dry_run") {
            None => false,
            Some(v) => v.as_bool().ok_or_else(|| {
                ApiError::new(422, "invalid_field", "dry_run must be true or false")
                    .with_field("dry_run")
            })?,
        };
        let selection = match (body.get("ids"), body.get("filter")) {
            (Some(_), Some(_)) => {
                return Err(ApiError::new(
                    422,
                    "conflicting_fields",
                    "send either ids or filter, not both",
                )
                .with_field("filter"))
            }
            (None, None) => {
                return Err(ApiError::new(
                    422,
                    "invalid_field",
                    "send ids (a list of job ids) or filter (an object)",
                )
                .with_field("ids"))
            }
            (Some(ids), None) => Selection::Ids(parse_ids(ids)?),
            (None, Some(filter)) => match JobFilter::from_json(filter, "filter")? {
                // As the CLI: a move of every job is never one keystroke away.
                filter if filter == JobFilter::default() => {
                    return Err(ApiError::new(
                        422,
                        "invalid_field",
                        "the filter names no criterion, so it would select every job: name at \
                         least one (status, type, family...)",
                    )
                    .with_field("filter"))
                }
                filter => Selection::Filter(filter),
            },
        };
        Ok(BulkRequest { selection, dry_run })
    }
}

fn parse_ids(value: &Value) -> Result<Vec<String>, ApiError> {
    let items = value.as_array().ok_or_else(|| {
        ApiError::new(422, "invalid_field", "ids must be a list of job ids").with_field("ids")
    })?;
    if items.is_empty() || items.len() > MAX_BULK {
        return Err(ApiError::new(
            422,
            "batch_too_large",
            format!("ids must hold 1 to {MAX_BULK} job ids"),
        )
        .with_field("ids"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, id)| {
            id.as_str()
                .filter(|s| !s.is_empty() && s.len() <= 64)
                .map(str::to_string)
                .ok_or_else(|| {
                    ApiError::new(
                        422,
                        "invalid_field",
                        "a job id is a string of 1-64 characters",
                    )
                    .with_field(format!("ids[{i}]"))
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_or_filter() {
        let r = BulkRequest::parse(&json!({"ids": ["a", "b"], "dry_run": true})).unwrap();
        assert_eq!(r.selection, Selection::Ids(vec!["a".into(), "b".into()]));
        assert!(r.dry_run);
        let r = BulkRequest::parse(&json!({"filter": {"family": "low"}})).unwrap();
        assert!(matches!(r.selection, Selection::Filter(_)));
        assert!(!r.dry_run);
    }

    #[test]
    fn an_action_may_allow_its_own_fields() {
        let body = json!({"ids": ["a"], "status": "skipped"});
        assert!(BulkRequest::parse_with(&body, &["status"]).is_ok());
        let refused = BulkRequest::parse(&body).unwrap_err();
        assert_eq!(refused.field.as_deref(), Some("status"));
    }

    #[test]
    fn every_bad_body_names_its_field() {
        let field = |body: Value| BulkRequest::parse(&body).unwrap_err().field.unwrap();
        assert_eq!(field(json!({})), "ids");
        assert_eq!(field(json!({"ids": [], "filter": {}})), "filter");
        assert_eq!(field(json!({"filter": {}})), "filter");
        assert_eq!(field(json!({"ids": []})), "ids");
        assert_eq!(field(json!({"ids": [1]})), "ids[0]");
        assert_eq!(field(json!({"ids": vec!["x"; MAX_BULK + 1]})), "ids");
        assert_eq!(
            field(json!({"filter": {"status": "nope"}})),
            "filter.status"
        );
        assert_eq!(field(json!({"filter": {}, "dry_run": "yes"})), "dry_run");
        assert_eq!(field(json!({"filter": {}, "force": true})), "force");
    }
}
