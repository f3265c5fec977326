//! The operator's job filter, shared by the job list, bulk actions and dead-letter replay: read
//! from a query string or a JSON object, validated (unknown keys and values are 422s naming the
//! field), and turned into an SQL condition with bound values, so no user text reaches SQL.

use crate::job::family::Family;
use crate::job::job_type::JobType;
use crate::job::lifecycle::JobStatus;
use crate::request::api_error::ApiError;
use crate::util::time_fmt::parse_rfc3339;
use serde_json::Value;

/// A value bound to a `?` placeholder.
#[derive(Clone, Debug, PartialEq)]
pub enum SqlValue {
    Text(String),
    Int(i64),
    Null,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobFilter {
    pub statuses: Vec<JobStatus>,
    pub job_type: Option<JobType>,
    pub family: Option<Family>,
    pub error_class: Option<String>,
    /// Who enqueued the job: a token's name, `token:<fingerprint>` or `schedule:<name>`.
    pub enqueued_by: Option<String>,
    pub created_after: Option<i64>,
    pub created_before: Option<i64>,
    pub finished_after: Option<i64>,
    pub finished_before: Option<i64>,
}

/// The filter's keys, in the order the API documents them.
pub const FILTER_KEYS: [&str; 9] = [
    "status",
    "type",
    "family",
    "error_class",
    "enqueued_by",
    "created_after",
    "created_before",
    "finished_after",
    "finished_before",
];

impl JobFilter {
    /// From query pairs; keys in `extra` (paging) are left to the caller, anything else is a 422.
    pub fn from_query<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
        extra: &[&str],
    ) -> Result<JobFilter, ApiError> {
        let mut filter = JobFilter::default();
        for (key, value) in pairs {
            if extra.contains(&key) {
                continue;
            }
            filter.set(key, value, key)?;
        }
        Ok(filter)
    }

    /// From a JSON object whose values are strings (`status` may also be an array of them);
    /// `at` names the object in error fields, e.g. `filter`.
    pub fn from_json(value: &Value, at: &str) -> Result<JobFilter, ApiError> {
        let object = value.as_object().ok_or_else(|| {
            ApiError::new(422, "invalid_field", "the filter must be an object").with_field(at)
        })?;
        let mut filter = JobFilter::default();
        for (key, v) in object {
            let field = format!("{at}.{key}");
            // An unknown key is named as such, whatever its value.
            if !FILTER_KEYS.contains(&key.as_str()) {
                filter.set(key, "", &field)?;
            }
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Array(items) if key == "status" => items
                    .iter()
                    .map(|i| i.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| invalid(&field, "a list of status names"))?
                    .join(","),
                _ => return Err(invalid(&field, "a string")),
            };
            filter.set(key, &text, &field)?;
        }
        Ok(filter)
    }

    fn set(&mut self, key: &str, value: &str, field: &str) -> Result<(), ApiError> {
        match key {
            "status" => {
                self.statuses = value
                    .split(',')
                    .map(|s| JobStatus::parse(s.trim()))
                    .collect::<Option<Vec<_>>>()
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| invalid(field, "status names such as dead,retrying"))?;
            }
            "type" => {
                self.job_type = Some(
                    JobType::parse(value).ok_or_else(|| invalid(field, "a registered job type"))?,
                )
            }
            "family" => {
                self.family =
                    Some(Family::parse(value).ok_or_else(|| invalid(field, "a queue family"))?)
            }
            "error_class" => {
                if value.is_empty() || value.len() > 64 {
                    return Err(invalid(field, "an error class such as server_error"));
                }
                self.error_class = Some(value.to_string());
            }
            "enqueued_by" => {
                if value.is_empty() || value.len() > 64 {
                    return Err(invalid(field, "a token's name such as webapp"));
                }
                self.enqueued_by = Some(value.to_string());
            }
            "created_after" | "created_before" | "finished_after" | "finished_before" => {
                let ms =
                    parse_rfc3339(value).ok_or_else(|| invalid(field, "an RFC 3339 timestamp"))?;
                *match key {
                    "created_after" => &mut self.created_after,
                    "created_before" => &mut self.created_before,
                    "finished_after" => &mut self.finished_after,
                    _ => &mut self.finished_before,
                } = Some(ms);
            }
            _ => {
                return Err(ApiError::new(
                    422,
                    "unknown_field",
                    format!("unknown filter {key:?}; known: {}", FILTER_KEYS.join(", ")),
                )
                .with_field(field))
            }
        }
        Ok(())
    }

    /// The statuses the filter matches, narrowed to `only` (empty: any status, unless `only`).
    pub fn statuses_within(&self, only: Option<&[JobStatus]>) -> Vec<JobStatus> {
        match only {
            Some(allowed) if self.statuses.is_empty() => allowed.to_vec(),
            Some(allowed) => self
                .statuses
                .iter()
                .copied()
                .filter(|s| allowed.contains(s))
                .collect(),
            None => self.statuses.clone(),
        }
    }

    /// `WHERE` conditions over `jobs` (never empty: `1 = 1` matches all) and their values, in
    /// placeholder order. `only` narrows the statuses to those an action may move; a filter
    /// naming none of them matches nothing.
    pub fn to_sql(&self, only: Option<&[JobStatus]>) -> (String, Vec<SqlValue>) {
        let mut conds = vec!["1 = 1".to_string()];
        let mut values = Vec::new();
        let statuses = self.statuses_within(only);
        if only.is_some() || !statuses.is_empty() {
            conds.push(format!(
                "status IN ({})",
                if statuses.is_empty() {
                    "NULL".to_string()
                } else {
                    let quoted: Vec<String> = statuses.iter().map(|s| format!("'{s}'")).collect();
                    quoted.join(", ")
                }
            ));
        }
        let mut text = |sql: &str, v: Option<&str>| {
            if let Some(v) = v {
                conds.push(sql.to_string());
                values.push(SqlValue::Text(v.to_string()));
            }
        };
        text("type = ?", self.job_type.map(JobType::as_str));
        text("family = ?", self.family.map(Family::as_str));
        text("error_class = ?", self.error_class.as_deref());
        text("enqueued_by = ?", self.enqueued_by.as_deref());
        for (sql, v) in [
            ("created_at >= ?", self.created_after),
            ("created_at < ?", self.created_before),
            ("finished_at >= ?", self.finished_after),
            ("finished_at < ?", self.finished_before),
        ] {
            if let Some(ms) = v {
                conds.push(sql.to_string());
                values.push(SqlValue::Int(ms));
            }
        }
        (conds.join(" AND "), values)
    }
}

fn invalid(field: &str, expected: &str) -> ApiError {
    ApiError::new(422, "invalid_field", format!("{field} must be {expected}")).with_field(field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn query_pairs_become_bound_conditions() {
        let f = JobFilter::from_query(
            [
                ("status", "dead,retrying"),
                ("family", "low"),
                ("created_after", "2025-01-01T00:00:00Z"),
                ("limit", "5"),
            ],
            &["limit", "cursor"],
        )
        .unwrap();
        assert_eq!(f.statuses, [JobStatus::Dead, JobStatus::Retrying]);
        let (sql, values) = f.to_sql(None);
        assert_eq!(
            sql,
            "1 = 1 AND status IN ('dead', 'retrying') AND family = ? AND created_at >= ?"
        );
        assert_eq!(
            values,
            [
                SqlValue::Text("low".into()),
                SqlValue::Int(1_735_689_600_000)
            ]
        );
    }

    #[test]
    fn bad_values_and_unknown_keys_name_the_field() {
        let err = |pairs: &[(&str, &str)]| {
            let e = JobFilter::from_query(pairs.iter().copied(), &[]).unwrap_err();
            (e.code, e.field.unwrap())
        };
        assert_eq!(
            err(&[("status", "failed")]),
            ("invalid_field", "status".into())
        );
        assert_eq!(err(&[("status", "")]), ("invalid_field", "status".into()));
        assert_eq!(err(&[("type", "nope")]), ("invalid_field", "type".into()));
        assert_eq!(
            err(&[("family", "huge")]),
            ("invalid_field", "family".into())
        );
        assert_eq!(
            err(&[("created_before", "yesterday")]),
            ("invalid_field", "created_before".into())
        );
        assert_eq!(
            err(&[("colour", "red")]),
            ("unknown_field", "colour".into())
        );
        assert_eq!(
            err(&[("enqueued_by", "")]),
            ("invalid_field", "enqueued_by".into())
        );
        // In JSON, an unknown key is unknown whatever its value's type.
        let e = JobFilter::from_json(&json!({"limit": 5}), "filter").unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            ("unknown_field", Some("filter.limit"))
        );
    }

    #[test]
    fn enqueued_by_is_a_bound_value() {
        let f = JobFilter::from_json(&json!({"enqueued_by": "webapp"}), "filter").unwrap();
        assert_eq!(
            f.to_sql(None),
            (
                "1 = 1 AND enqueued_by = ?".to_string(),
                vec![SqlValue::Text("webapp".into())]
            )
        );
    }

    #[test]
    fn json_filters_accept_status_lists_and_name_nested_fields() {
        let f = JobFilter::from_json(
            &json!({"status": ["dead"], "type": "http", "error_class": "server_error"}),
            "filter",
        )
        .unwrap();
        assert_eq!(f.statuses, [JobStatus::Dead]);
        assert_eq!(f.job_type, Some(JobType::parse("http").unwrap()));
        let e = JobFilter::from_json(&json!({"family": 3}), "filter").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("filter.family"));
        let e = JobFilter::from_json(&json!([]), "filter").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("filter"));
    }

    #[test]
    fn an_action_only_touches_the_statuses_it_may_move() {
        let any = JobFilter::default();
        assert_eq!(
            any.to_sql(Some(&[JobStatus::Dead])).0,
            "1 = 1 AND status IN ('dead')"
        );
        let succeeded = JobFilter {
            statuses: vec![JobStatus::Succeeded, JobStatus::Dead],
            ..JobFilter::default()
        };
        assert_eq!(
            succeeded
                .to_sql(Some(&[JobStatus::Dead, JobStatus::Scheduled]))
                .0,
            "1 = 1 AND status IN ('dead')"
        );
        let none = JobFilter {
            statuses: vec![JobStatus::Succeeded],
            ..JobFilter::default()
        };
        assert_eq!(
            none.to_sql(Some(&[JobStatus::Dead])).0,
            "1 = 1 AND status IN (NULL)"
        );
        assert_eq!(any.to_sql(None), ("1 = 1".to_string(), vec![]));
    }
}
