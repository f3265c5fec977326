//! Which job types a named enqueue token may use (the `ENQUEUE_TOKEN_TYPES` var, docs/http-api.md
//! "Scoped tokens"): a token fenced to some types enqueues only those, chain steps included, reads
//! only jobs of those types, and cannot let an `http` target add jobs. A token the var does not
//! name may use every type. Admin tokens are never fenced. A fence holds type names, not the
//! types: a team's own type (crate::job::type_definition) may be defined after the var is read.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::job::enqueue::NewJob;
use crate::job::job_type::JobType;
use crate::job::registry::snake_case;
use crate::job::type_definition::MAX_NAME_CHARS;
use crate::request::api_error::ApiError;

/// The names of the job types one caller may use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeFence(Arc<[String]>);

/// The var's value: token name -> the fence of that name's tokens.
pub type Fences = HashMap<String, TypeFence>;

impl TypeFence {
    /// Whether a job of type `name` is inside the fence.
    pub fn allows(&self, name: &str) -> bool {
        self.0.iter().any(|t| t == name)
    }

    /// `job` (enqueued at `at`: `""` for POST /v1/jobs, `jobs[3].` in a batch) stays inside the
    /// fence: its type and its chain steps' types, and no payload (its own or a step's) lets its
    /// target add jobs, which could be of any type. 403 naming the field otherwise.
    /// A `callback` (its delivery a job of type `callback`) is inside the fence only when the
    /// fence names that type; a group step's branches are held as its steps are.
    pub fn check(&self, job: &NewJob, at: &str) -> Result<(), ApiError> {
        let payload = serde_json::from_str(&job.payload).unwrap_or_default();
        self.check_spec(job.job_type.as_str(), &payload, at)?;
        if job.callback.is_some() {
            self.check_type(JobType::CALLBACK.as_str(), &format!("{at}callback"))?;
        }
        let steps: Vec<Value> = match &job.steps {
            // Steps were validated: each an object with a registered `type`.
            Some(steps) => serde_json::from_str(steps).map_err(|e| {
                ApiError::new(422, "invalid_field", e.to_string()).with_field(format!("{at}steps"))
            })?,
            None => Vec::new(),
        };
        for (i, step) in steps.iter().enumerate() {
            let name = step["type"].as_str().unwrap_or_default();
            self.check_spec(name, &step["payload"], &format!("{at}steps[{i}]."))?;
        }
        Ok(())
    }

    /// One spec at `at` (`steps[1].`): its type, its payload's vouching, and a group's branches
    /// (`jobs[j]`, or the `job` each element runs).
    fn check_spec(&self, name: &str, payload: &Value, at: &str) -> Result<(), ApiError> {
        self.check_type(name, &format!("{at}type"))?;
        check_no_vouch(payload, &format!("{at}payload"))?;
        if name != JobType::GROUP.as_str() {
            return Ok(());
        }
        let listed = payload["jobs"].as_array().into_iter().flatten();
        let branches = listed
            .enumerate()
            .map(|(j, b)| (b, format!("{at}payload.jobs[{j}].")));
        let each = payload.get("job").map(|b| (b, format!("{at}payload.job.")));
        for (branch, at) in branches.chain(each) {
            let name = branch["type"].as_str().unwrap_or_default();
            self.check_spec(name, &branch["payload"], &at)?;
        }
        Ok(())
    }

    fn check_type(&self, name: &str, field: &str) -> Result<(), ApiError> {
        if self.allows(name) {
            return Ok(());
        }
        let message = format!(
            "this token may not use job type \"{name}\" (it may use: {})",
            self.0.join(", ")
        );
        Err(ApiError::new(403, "forbidden", message).with_field(field))
    }
}

/// A fenced caller cannot vouch for a target (`allow_follow_ups`): its answer's follow-up jobs
/// would be of any type.
fn check_no_vouch(payload: &Value, field: &str) -> Result<(), ApiError> {
    if payload["allow_follow_ups"] == Value::Bool(true) {
        let message = "a token limited to job types cannot let a target add jobs";
        return Err(ApiError::new(403, "forbidden", message)
            .with_field(format!("{field}.allow_follow_ups")));
    }
    Ok(())
}

/// Parses `ENQUEUE_TOKEN_TYPES` (a JSON object: token name -> the job types it may use), given
/// the names the enqueue tokens have (`names`). Every name must be one of them and every type a
/// type's name: a misspelt token name would leave the token it meant unfenced, so any fault
/// refuses the whole var (a misspelt type only refuses more). Unset or blank: no fence.
pub fn parse_fences(var: Option<&str>, names: &[&str]) -> Result<Fences, String> {
    let Some(var) = var.filter(|v| !v.trim().is_empty()) else {
        return Ok(Fences::new());
    };
    let object: HashMap<String, Value> = serde_json::from_str(var).map_err(|_| {
        "must be a JSON object of token name -> list of job types, e.g. {\"webapp\": [\"http\"]}"
            .to_string()
    })?;
    let mut fences = Fences::new();
    for (name, types) in object {
        if !names.contains(&name.as_str()) {
            return Err(format!("\"{name}\" names no ENQUEUE_TOKENS entry"));
        }
        let list = match types.as_array() {
            Some(list) if !list.is_empty() => list,
            _ => return Err(format!("\"{name}\": must be a non-empty list of job types")),
        };
        let types = list
            .iter()
            .map(|t| match t.as_str() {
                Some(t) if snake_case(t) && t.len() <= MAX_NAME_CHARS => Ok(t.to_string()),
                _ => Err(format!("\"{name}\": {t} is not a job type's name")),
            })
            .collect::<Result<Arc<[String]>, String>>()?;
        fences.insert(name, TypeFence(types));
    }
    Ok(fences)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::enqueue::validate_enqueue;
    use crate::retry::retry_policy::QueueDelayLimit;
    use serde_json::json;

    const NOW: i64 = 1_700_000_000_000;

    fn fence(types: &[&str]) -> TypeFence {
        let var = json!({ "site": types }).to_string();
        parse_fences(Some(&var), &["site"])
            .unwrap()
            .remove("site")
            .unwrap()
    }

    fn job(body: Value) -> NewJob {
        validate_enqueue(&body, "01J".into(), NOW, QueueDelayLimit::DEFAULT).unwrap()
    }

    fn refused(fence: &TypeFence, body: Value, at: &str) -> (u16, String) {
        let e = fence.check(&job(body), at).unwrap_err();
        (e.status, e.field.unwrap_or_default())
    }

    #[test]
    fn a_fence_holds_the_type_its_steps_and_follow_ups() {
        let f = fence(&["noop", "http"]);
        assert!(f.check(&job(json!({"type": "noop"})), "").is_ok());
        let http = json!({"type": "http", "payload": {"url": "https://a.example"}});
        assert!(f.check(&job(http), "").is_ok());
        assert_eq!(
            refused(
                &f,
                json!({"type": "link_health_check", "payload": {"urls": ["https://a.example"]}}),
                "jobs[2]."
            ),
            (403, "jobs[2].type".into())
        );
        let steps = json!({"type": "noop", "steps": [{"type": "noop"}, {"type": "ai_tagging"}]});
        assert_eq!(refused(&f, steps, ""), (403, "steps[1].type".into()));
        let vouch = json!({"type": "http", "payload": {"url": "https://a.example", "allow_follow_ups": true}});
        assert_eq!(
            refused(&f, vouch, ""),
            (403, "payload.allow_follow_ups".into())
        );
        let step_vouch = json!({"type": "noop", "steps": [{"type": "http",
            "payload": {"url": "https://a.example", "allow_follow_ups": true}}]});
        assert_eq!(
            refused(&f, step_vouch, "jobs[0]."),
            (403, "jobs[0].steps[0].payload.allow_follow_ups".into())
        );
        assert!(f.allows("http") && !f.allows("ai_tagging"));
    }

    #[test]
    fn a_fence_holds_a_group_s_branches_and_a_callback() {
        let f = fence(&["noop", "http", "group"]);
        let each = |job: Value| {
            json!({"type": "noop", "name": "a", "steps": [{"type": "group",
                "payload": {"for_each": "items", "job": job}}]})
        };
        assert!(f.check(&job(each(json!({"type": "noop"}))), "").is_ok());
        assert_eq!(
            refused(&f, each(json!({"type": "ai_tagging"})), ""),
            (403, "steps[0].payload.job.type".into())
        );
        let vouching = json!({"type": "http", "payload": {"url": "https://a.example", "allow_follow_ups": true}});
        let listed = json!({"type": "noop", "steps": [{"type": "group",
            "payload": {"jobs": [{"type": "noop"}, vouching]}}]});
        assert_eq!(
            refused(&f, listed, ""),
            (
                403,
                "steps[0].payload.jobs[1].payload.allow_follow_ups".into()
            )
        );
        let called_back = json!({"type": "noop", "callback": {"url": "https://a.example/done"}});
        assert_eq!(
            refused(&f, called_back.clone(), ""),
            (403, "callback".into())
        );
        assert!(fence(&["noop", "callback"])
            .check(&job(called_back), "")
            .is_ok());
    }

    #[test]
    fn the_var_is_refused_whole_for_any_fault() {
        let names = ["site", "token:0123456789ab"];
        assert_eq!(parse_fences(None, &names), Ok(Fences::new()));
        assert_eq!(parse_fences(Some("  "), &names), Ok(Fences::new()));
        let ok = parse_fences(
            Some(r#"{"site": ["noop"], "token:0123456789ab": ["http"]}"#),
            &names,
        );
        assert_eq!(ok.map(|f| f.len()), Ok(2));
        for (var, says) in [
            (r#"["noop"]"#, "JSON object"),
            ("{", "JSON object"),
            (
                r#"{"sight": ["noop"]}"#,
                "\"sight\" names no ENQUEUE_TOKENS entry",
            ),
            (r#"{"site": []}"#, "non-empty list"),
            (r#"{"site": "noop"}"#, "non-empty list"),
            (
                r#"{"site": ["noop", "No-pe"]}"#,
                "\"No-pe\" is not a job type's name",
            ),
            (r#"{"site": [3]}"#, "3 is not a job type's name"),
        ] {
            let e = parse_fences(Some(var), &names).unwrap_err();
            assert!(e.contains(says), "{var}: {e}");
        }
    }
}
