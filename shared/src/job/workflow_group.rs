//! Fan-out and fan-in (docs/app-guide.md "Workflows"): a chain step of the built-in type `group`
//! runs its branches in parallel, each an ordinary job under its own type's family and limits,
//! and ends once they have: the chain then goes on to the step after it, which takes the
//! branches' results as the group's. The branches are listed in the group's payload (`jobs`),
//! or made from a list in the result of the step before it (`for_each` with a `job` for each
//! element). Pure decisions here: the consumer writes the branches with the group, makes the
//! group due when its last branch ends, and runs it (`consumer/src/handlers/group.rs`).

use serde::Deserialize;
use serde_json::{json, Value};

use crate::job::payloads::{payload_object, FieldError};

/// The most branches one group runs (a `for_each` list past it fails the group's step).
pub const MAX_BRANCHES: usize = 1_000;

/// The most branches a group's payload may list itself (`jobs`): a longer list comes from a
/// step's result through `for_each`.
pub const MAX_LISTED_BRANCHES: usize = 100;

/// The most a group's report of its branches takes stored: its result, which the step after it
/// takes as an input (built from stored results, so allowed more than a remote's answer).
pub const MAX_REPORT_BYTES: usize = 256 * 1024;

/// The branches' ends the report keeps whole (each its id, status, and result or error), in
/// branch order, as long as they fit in this; a branch past it is reported by id and status only
/// (its result is read by its id). The rest of the report fits beside it: at most 1,000 ids and
/// statuses, about 50 bytes each.
pub const MAX_REPORTED_RESULTS_BYTES: usize = 192 * 1024;

/// A `group` job's payload, read by hand from its JSON (a serde struct costs each Worker
/// kilobytes of WASM: docs/performance.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupPayload<'a> {
    /// The branches, as job specs.
    pub jobs: Option<&'a [Value]>,
    /// Where the list is in the result of the step before the group: keys joined by dots
    /// (`body.items`); one branch per element.
    pub for_each: Option<&'a str>,
    /// The job each element's branch runs, with `inputs.item` the element and `inputs.index`
    /// its place.
    pub job: Option<&'a Value>,
    pub on_failure: OnFailure,
}

/// What a group does when a branch ends without succeeding (dead, cancelled or skipped).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnFailure {
    /// The group fails at once (its chain with it); branches not yet started are skipped.
    #[default]
    FailFast,
    /// The group waits for every branch and succeeds, reporting each one's end; the step after
    /// it decides.
    Continue,
}

const FIELDS: [&str; 4] = ["jobs", "for_each", "job", "on_failure"];

impl<'a> GroupPayload<'a> {
    /// The payload's fields, checked: either `jobs`, or `for_each` with `job`. Errors name the
    /// field relative to the payload.
    pub fn parse(payload: &'a Value) -> Result<GroupPayload<'a>, FieldError> {
        let object = payload_object(payload, &FIELDS)?;
        let wrong = |field: &str, message: &str| Err(FieldError::new(field, message));
        let on_failure = match object.get("on_failure").map(Value::as_str) {
            None | Some(Some("fail_fast")) => OnFailure::FailFast,
            Some(Some("continue")) => OnFailure::Continue,
            Some(_) => return wrong("on_failure", "must be fail_fast or continue"),
        };
        let jobs = match object.get("jobs") {
            None => None,
            Some(Value::Array(jobs)) if (1..=MAX_LISTED_BRANCHES).contains(&jobs.len()) => {
                Some(jobs.as_slice())
            }
            Some(_) => {
                let message = format!(
                    "must list 1 to {MAX_LISTED_BRANCHES} jobs (a longer list comes from for_each)"
                );
                return wrong("jobs", &message);
            }
        };
        let for_each = match object.get("for_each") {
            None => None,
            Some(Value::String(path)) if !path.split('.').any(str::is_empty) => Some(path.as_str()),
            Some(_) => return wrong("for_each", "must be keys joined by dots, e.g. body.items"),
        };
        let job = object.get("job");
        match (jobs, for_each, job) {
            (Some(_), None, None) | (None, Some(_), Some(_)) => Ok(GroupPayload {
                jobs,
                for_each,
                job,
                on_failure,
            }),
            (None, Some(_), None) => wrong("job", "for_each needs the job to run for each element"),
            (None, None, Some(_)) => {
                wrong("for_each", "job needs for_each, the list to run it for")
            }
            _ => wrong(
                "jobs",
                "give either jobs (the branches) or for_each with job",
            ),
        }
    }

    /// The registry's check of a `group` payload.
    pub fn check(payload: &Value) -> Result<(), FieldError> {
        GroupPayload::parse(payload).map(drop)
    }

    /// The branch specs as given (`jobs`), or the one spec each element runs (`job`).
    pub fn specs(&self) -> Vec<&'a Value> {
        match (self.jobs, self.job) {
            (Some(jobs), _) => jobs.iter().collect(),
            (None, Some(job)) => vec![job],
            (None, None) => Vec::new(),
        }
    }

    /// The field of `specs()[i]` in the payload, for errors.
    pub fn spec_field(&self, i: usize) -> String {
        match self.jobs {
            Some(_) => format!("payload.jobs[{i}]"),
            None => "payload.job".to_string(),
        }
    }
}

/// One branch to enqueue: its spec, and for a `for_each` branch the element and its index,
/// which its `inputs` get beside the group's own.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchSpec<'a> {
    pub spec: &'a Value,
    pub item: Option<(&'a Value, usize)>,
}

/// The group's branches, given the result of the step before it. `Err` says why the group
/// cannot start (its step then fails its chain).
pub fn branches<'a>(
    payload: &GroupPayload<'a>,
    before: Option<&'a Value>,
) -> Result<Vec<BranchSpec<'a>>, String> {
    let (Some(path), Some(job)) = (payload.for_each, payload.job) else {
        let jobs = payload.jobs.into_iter().flatten();
        return Ok(jobs.map(|spec| BranchSpec { spec, item: None }).collect());
    };
    let list = path
        .split('.')
        .try_fold(before.unwrap_or(&Value::Null), |at, key| at.get(key))
        .and_then(Value::as_array)
        .ok_or_else(|| format!("the result of the step before it has no list at {path}"))?;
    if list.len() > MAX_BRANCHES {
        return Err(format!(
            "the list at {path} holds {} elements; a group runs at most {MAX_BRANCHES} branches",
            list.len()
        ));
    }
    Ok((list.iter().enumerate())
        .map(|(i, item)| BranchSpec {
            spec: job,
            item: Some((item, i)),
        })
        .collect())
}

/// A group's branches as the group reads them when it runs (one query, the store's
/// `job_list_branch_ends`).
#[derive(Debug, Clone, Deserialize)]
pub struct Branches {
    pub count: i64,
    /// Those not ended yet.
    pub live: i64,
    pub succeeded: i64,
    /// The first branch, in order, that ended without succeeding: "branch N (type, id) ended
    /// dead: its error".
    pub failure: Option<String>,
    /// 1 when some branch's end was cut to its id and status for [`MAX_REPORTED_RESULTS_BYTES`]
    /// (D1 has no booleans), else 0.
    pub cut: i64,
    /// Each branch in order, JSON: `{id, status}` with its `result`, or its `error`, while they
    /// fit.
    pub results: String,
}

/// What a group does when it runs, given its branches.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupEnd {
    /// Branches are still live and none has failed it: it waits on.
    Waiting { live: i64 },
    /// A branch failed a fail-fast group: the message names it.
    Failed(String),
    /// Every branch ended: the report is the group's result.
    Done(Value),
}

/// The group's end from its `branches`, under `on_failure`.
pub fn group_end(branches: &Branches, on_failure: OnFailure) -> GroupEnd {
    if let (Some(failure), OnFailure::FailFast) = (&branches.failure, on_failure) {
        return GroupEnd::Failed(failure.clone());
    }
    if branches.live > 0 {
        return GroupEnd::Waiting {
            live: branches.live,
        };
    }
    let results: Value = serde_json::from_str(&branches.results).unwrap_or(Value::Null);
    GroupEnd::Done(json!({
        "branches": branches.count,
        "succeeded": branches.succeeded,
        "failed": branches.count - branches.succeeded,
        "results_cut": branches.cut != 0,
        "results": results,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(payload: Value) -> Option<String> {
        GroupPayload::check(&payload).err().map(|e| e.field)
    }

    #[test]
    fn a_payload_lists_its_branches_or_names_a_list() {
        assert_eq!(field(json!({"jobs": [{"type": "noop"}]})), None);
        let each =
            json!({"for_each": "body.items", "job": {"type": "noop"}, "on_failure": "continue"});
        assert_eq!(field(each), None);
        assert_eq!(field(json!({})).as_deref(), Some("jobs"));
        assert_eq!(field(json!({"jobs": []})).as_deref(), Some("jobs"));
        let many = vec![json!({"type": "noop"}); MAX_LISTED_BRANCHES + 1];
        assert_eq!(field(json!({ "jobs": many })).as_deref(), Some("jobs"));
        assert_eq!(field(json!({"for_each": "a"})).as_deref(), Some("job"));
        assert_eq!(field(json!({"job": {}})).as_deref(), Some("for_each"));
        let empty_key = json!({"for_each": "body..items", "job": {}});
        assert_eq!(field(empty_key).as_deref(), Some("for_each"));
        let both = json!({"jobs": [{}], "for_each": "a", "job": {}});
        assert_eq!(field(both).as_deref(), Some("jobs"));
        assert_eq!(
            field(json!({"jobs": [{}], "on_failure": "later"})).as_deref(),
            Some("on_failure")
        );
        assert_eq!(
            field(json!({"jobs": [{}], "zzz": 1})).as_deref(),
            Some("zzz")
        );
        assert_eq!(field(json!([])).as_deref(), Some("payload"));
    }

    #[test]
    fn for_each_makes_a_branch_per_element_of_the_list_before_it() {
        let each = json!({"for_each": "body.items", "job": {"type": "noop"}});
        let payload = GroupPayload::parse(&each).unwrap();
        let before = json!({"status": 200, "body": {"items": ["a", {"b": 1}]}});
        let made = branches(&payload, Some(&before)).unwrap();
        assert_eq!(made.len(), 2);
        assert_eq!(made[1].item, Some((&json!({"b": 1}), 1)));
        assert_eq!(made[0].spec, &json!({"type": "noop"}));
        let missing = branches(&payload, Some(&json!({"body": {"items": 3}}))).unwrap_err();
        assert!(missing.contains("no list at body.items"), "{missing}");
        assert!(branches(&payload, None).is_err());
        let long = json!({"body": {"items": vec![0; MAX_BRANCHES + 1]}});
        assert!(branches(&payload, Some(&long))
            .unwrap_err()
            .contains("at most 1000"));
        let two = json!({"jobs": [{"type": "noop"}, {"type": "http"}]});
        let listed = GroupPayload::parse(&two).unwrap();
        let made = branches(&listed, None).unwrap();
        assert_eq!((made.len(), made[1].item), (2, None));
    }

    fn ends(live: i64, failure: Option<&str>) -> Branches {
        Branches {
            count: 2,
            live,
            succeeded: 1,
            failure: failure.map(str::to_string),
            cut: 0,
            results: r#"[{"id":"b0","status":"dead","error":"HTTP 500"},{"id":"b1","status":"succeeded","result":{"n":2}}]"#.into(),
        }
    }

    #[test]
    fn the_report_of_the_most_branches_fits_its_bound() {
        let cut = r#"{"id":"01KBCDEFGHJKMNPQRSTVWXYZ01","status":"cancelled"}"#;
        let rest = MAX_BRANCHES * (cut.len() + 1) + 256;
        assert!(MAX_REPORTED_RESULTS_BYTES + rest <= MAX_REPORT_BYTES);
    }

    #[test]
    fn a_group_ends_when_its_branches_have_or_fails_fast() {
        let live = ends(1, None);
        assert_eq!(
            group_end(&live, OnFailure::FailFast),
            GroupEnd::Waiting { live: 1 }
        );
        let failed = ends(1, Some("branch 0 (http, b0) ended dead: HTTP 500"));
        assert_eq!(
            group_end(&failed, OnFailure::FailFast),
            GroupEnd::Failed("branch 0 (http, b0) ended dead: HTTP 500".into())
        );
        assert_eq!(
            group_end(&failed, OnFailure::Continue),
            GroupEnd::Waiting { live: 1 }
        );
        let ended = ends(0, Some("branch 0 (http, b0) ended dead: HTTP 500"));
        let GroupEnd::Done(report) = group_end(&ended, OnFailure::Continue) else {
            panic!("every branch ended");
        };
        assert_eq!(
            report,
            json!({"branches": 2, "succeeded": 1, "failed": 1, "results_cut": false, "results": [
                {"id": "b0", "status": "dead", "error": "HTTP 500"},
                {"id": "b1", "status": "succeeded", "result": {"n": 2}}]})
        );
    }
}
