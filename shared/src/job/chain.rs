//! Job chains (docs/app-guide.md "Job chains", e.g. scrape -> generate -> test): a job may carry
//! the steps that follow it, and a handler may return follow-up jobs. Steps run one after the
//! other; each is an ordinary job whose parent is the chain's first job. Pure decisions here;
//! the consumer writes them in the batch that records the step's outcome.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::job::lifecycle::JobStatus;
use crate::job::stored_result::MAX_RESPONSE_BYTES;

/// Steps one chain may run in all, follow-ups included: a handler that answers follow-ups on
/// every step cannot grow a chain without end.
pub const MAX_CHAIN_LENGTH: u32 = 100;

/// Key of a handler's result that holds follow-up jobs; for delivered types the app answers
/// `{"follow_up": [...]}` and the key is found inside the stored response body.
pub const FOLLOW_UP_KEY: &str = "follow_up";

/// Key of a delivered type's result when the app's answer was cut at the read cap
/// (`stored_result::MAX_RESPONSE_BYTES`): its `body` is then the text read so far.
pub const BODY_TRUNCATED_KEY: &str = "body_truncated";

/// Follow-up jobs in a handler's result: `result.follow_up`, or `result.body.follow_up` for a
/// delivered type whose app answered with them. `Err` for an answer cut at the read cap:
/// whatever follow-ups it holds cannot be read, and a step must not pass for done without them
/// (docs/app-guide.md "Job chains").
pub fn follow_ups(result: Option<&Value>) -> Result<Option<&Value>, String> {
    let Some(result) = result else {
        return Ok(None);
    };
    if result.get(BODY_TRUNCATED_KEY) == Some(&Value::Bool(true)) {
        return Err(format!(
            "the answer is over {MAX_RESPONSE_BYTES} bytes and was cut there, so the \
             follow-up jobs it may hold could not be read: a job that may add follow-ups must \
             answer within that"
        ));
    }
    Ok(result
        .get(FOLLOW_UP_KEY)
        .or_else(|| result.get("body")?.get(FOLLOW_UP_KEY))
        .filter(|v| !v.is_null()))
}

/// Where a job stands in a chain, as its row says.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainPosition<'a> {
    pub job_id: &'a str,
    pub parent_id: Option<&'a str>,
    /// 0 for the chain's first job.
    pub step: u32,
    /// Steps still to come, JSON.
    pub next_steps: Option<&'a str>,
    /// Set on a chain's first job (the parent) only.
    pub chain_status: Option<&'a str>,
}

impl ChainPosition<'_> {
    fn in_chain(&self) -> bool {
        self.parent_id.is_some() || self.chain_status.is_some()
    }

    /// The chain's parent: the first job.
    pub fn parent(&self) -> &str {
        self.parent_id.unwrap_or(self.job_id)
    }
}

/// What a finished attempt does to its chain.
#[derive(Debug, Clone, PartialEq)]
pub enum ChainMove {
    /// Not in a chain, and nothing follows.
    None,
    /// Enqueue `step` (a validated spec) as step number `index`, carrying `rest`.
    Next {
        parent_id: String,
        index: u32,
        step: Value,
        rest: Vec<Value>,
    },
    /// The last step succeeded.
    Done { parent_id: String },
    /// A step went dead: the chain stops and the parent is failed, naming the step.
    Failed { parent_id: String, message: String },
}

/// After a step succeeds: its follow-ups run first, then the steps it carried.
pub fn after_success(at: &ChainPosition, follow_ups: Vec<Value>) -> ChainMove {
    let carried: Vec<Value> = at
        .next_steps
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    let last_step = at.step as usize + follow_ups.len() + carried.len();
    if last_step >= MAX_CHAIN_LENGTH as usize {
        return ChainMove::Failed {
            parent_id: at.parent().to_string(),
            message: format!(
                "step {} asked for follow-ups that would make the chain {} steps long; at most {MAX_CHAIN_LENGTH} run",
                at.step,
                last_step + 1
            ),
        };
    }
    let mut upcoming = follow_ups.into_iter().chain(carried);
    match upcoming.next() {
        Some(step) => ChainMove::Next {
            parent_id: at.parent().to_string(),
            index: at.step + 1,
            step,
            rest: upcoming.collect(),
        },
        None if at.in_chain() => ChainMove::Done {
            parent_id: at.parent().to_string(),
        },
        None => ChainMove::None,
    }
}

/// After a step went dead: the chain stops there.
pub fn after_death(at: &ChainPosition, job_type: &str, error: &str) -> ChainMove {
    after_end(at, job_type, &format!("went dead: {error}"))
}

/// After a step was skipped (e.g. its budget is spent): the chain stops there, as after a death.
pub fn after_skip(at: &ChainPosition, job_type: &str, reason: &str) -> ChainMove {
    after_end(at, job_type, &format!("was skipped: {reason}"))
}

/// A step that ended without succeeding fails its chain; `ended` says how ("went dead: ...").
fn after_end(at: &ChainPosition, job_type: &str, ended: &str) -> ChainMove {
    if !at.in_chain() {
        return ChainMove::None;
    }
    ChainMove::Failed {
        parent_id: at.parent().to_string(),
        message: format!("step {} ({job_type}) {ended}", at.step),
    }
}

/// A step's chain columns as a row read for its death holds them (all absent outside a chain);
/// the store's rows flatten it in.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ChainColumns {
    pub parent_id: Option<String>,
    pub chain_step: Option<u32>,
    pub chain_status: Option<String>,
}

/// The chain a step fails by going dead with `error` (found dead of a lost attempt by the
/// consumer's claim or the sweep's rescuer): `(parent_id, message)`, or `None` outside a chain
/// or once the chain ended.
pub fn failed_chain_of_dead_step(
    job_id: &str,
    job_type: &str,
    chain: &ChainColumns,
    error: &str,
) -> Option<(String, String)> {
    failed_chain_of_ended_step(job_id, job_type, chain, &format!("went dead: {error}"))
}

/// The chain a step fails by ending unrun or dead, `ended` saying how ("was skipped: ..."):
/// `(parent_id, message)`, or `None` outside a chain or once the chain ended.
pub fn failed_chain_of_ended_step(
    job_id: &str,
    job_type: &str,
    chain: &ChainColumns,
    ended: &str,
) -> Option<(String, String)> {
    let at = ChainPosition {
        job_id,
        parent_id: chain.parent_id.as_deref(),
        step: chain.chain_step.unwrap_or(0),
        next_steps: None,
        chain_status: chain.chain_status.as_deref(),
    };
    match after_end(&at, job_type, ended) {
        ChainMove::Failed { parent_id, message } => Some((parent_id, message)),
        _ => None,
    }
}

/// A chain's steps by how far each got: the phases that succeeded, failed (went dead), did not
/// run (still pending, or skipped or cancelled), and are under way. Indexes are step numbers.
#[derive(Debug, Default, PartialEq, Serialize)]
pub struct ChainPhases {
    pub succeeded: Vec<u32>,
    pub failed: Vec<u32>,
    pub not_run: Vec<u32>,
    pub in_progress: Vec<u32>,
}

impl ChainPhases {
    /// From each step's number and status (`pending` for a step not yet enqueued).
    pub fn of<'a>(steps: impl IntoIterator<Item = (u32, &'a str)>) -> ChainPhases {
        let mut phases = ChainPhases::default();
        for (step, status) in steps {
            let into = match JobStatus::parse(status) {
                Some(JobStatus::Succeeded) => &mut phases.succeeded,
                Some(JobStatus::Dead) => &mut phases.failed,
                Some(s) if s.is_live() => &mut phases.in_progress,
                _ => &mut phases.not_run,
            };
            into.push(step);
        }
        phases
    }

    /// The chain's outcome: `partial` when it failed after some phases succeeded, else its
    /// status (`running`, `succeeded`, `failed`).
    pub fn outcome<'a>(&self, chain_status: &'a str) -> &'a str {
        if chain_status == "failed" && !self.succeeded.is_empty() {
            "partial"
        } else {
            chain_status
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pos<'a>(
        parent: Option<&'a str>,
        step: u32,
        next: Option<&'a str>,
        status: Option<&'a str>,
    ) -> ChainPosition<'a> {
        ChainPosition {
            job_id: "J",
            parent_id: parent,
            step,
            next_steps: next,
            chain_status: status,
        }
    }

    #[test]
    fn follow_ups_come_from_the_result_or_the_apps_body() {
        let direct = json!({"follow_up": [{"type": "noop"}]});
        let body = json!({"status": 200, "body": {"follow_up": [{"type": "noop"}]}});
        assert!(follow_ups(Some(&direct)).unwrap().is_some());
        assert!(follow_ups(Some(&body)).unwrap().is_some());
        assert!(follow_ups(Some(&json!({"status": 200, "body": "x"})))
            .unwrap()
            .is_none());
        assert!(follow_ups(None).unwrap().is_none());
        let cut = json!({"status": 200, "body": "{\"follow_up\": [", "body_truncated": true});
        assert!(follow_ups(Some(&cut))
            .unwrap_err()
            .contains("could not be read"));
    }

    #[test]
    fn the_parent_runs_step_one_then_each_step_the_next() {
        let steps = json!([{"type": "noop"}, {"type": "http"}]).to_string();
        let first = after_success(&pos(None, 0, Some(&steps), Some("running")), vec![]);
        assert_eq!(
            first,
            ChainMove::Next {
                parent_id: "J".into(),
                index: 1,
                step: json!({"type": "noop"}),
                rest: vec![json!({"type": "http"})],
            }
        );
        let last = after_success(&pos(Some("P"), 2, Some("[]"), None), vec![]);
        assert_eq!(
            last,
            ChainMove::Done {
                parent_id: "P".into()
            }
        );
    }

    #[test]
    fn follow_ups_run_before_the_carried_steps_and_start_a_chain() {
        let carried = json!([{"type": "http"}]).to_string();
        let m = after_success(
            &pos(Some("P"), 1, Some(&carried), None),
            vec![json!({"type": "noop"})],
        );
        let ChainMove::Next {
            index, step, rest, ..
        } = m
        else {
            panic!("{m:?}")
        };
        assert_eq!(
            (index, step, rest),
            (2, json!({"type": "noop"}), vec![json!({"type": "http"})])
        );
        // A lone job that returns follow-ups becomes the parent of a new chain.
        let m = after_success(&pos(None, 0, None, None), vec![json!({"type": "noop"})]);
        assert!(matches!(m, ChainMove::Next { ref parent_id, index: 1, .. } if parent_id == "J"));
        assert_eq!(
            after_success(&pos(None, 0, None, None), vec![]),
            ChainMove::None
        );
    }

    #[test]
    fn follow_ups_cannot_grow_a_chain_past_its_length() {
        let two = vec![json!({"type": "noop"}); 2];
        let last = MAX_CHAIN_LENGTH - 1;
        // Step 97 may add two more (98, 99): the chain then has MAX_CHAIN_LENGTH steps.
        let m = after_success(&pos(Some("P"), last - 2, None, None), two.clone());
        assert!(
            matches!(m, ChainMove::Next { index, .. } if index == last - 1),
            "{m:?}"
        );
        let m = after_success(&pos(Some("P"), last - 1, None, None), two);
        let ChainMove::Failed { parent_id, message } = m else {
            panic!("{m:?}")
        };
        assert_eq!(parent_id, "P");
        assert!(message.contains("at most 100"), "{message}");
        // The last step itself still completes the chain.
        assert!(matches!(
            after_success(&pos(Some("P"), last, None, None), vec![]),
            ChainMove::Done { .. }
        ));
    }

    #[test]
    fn a_dead_step_fails_the_parent_naming_the_step() {
        let m = after_death(
            &pos(Some("P"), 2, None, None),
            "generate",
            "client_error: HTTP 404",
        );
        assert_eq!(
            m,
            ChainMove::Failed {
                parent_id: "P".into(),
                message: "step 2 (generate) went dead: client_error: HTTP 404".into()
            }
        );
        assert_eq!(
            after_skip(&pos(Some("p"), 1, None, None), "ai_tagging", "budget spent"),
            ChainMove::Failed {
                parent_id: "p".into(),
                message: "step 1 (ai_tagging) was skipped: budget spent".into()
            }
        );
        assert_eq!(
            after_death(&pos(None, 0, None, None), "http", "x"),
            ChainMove::None
        );
    }

    #[test]
    fn phases_say_what_succeeded_failed_and_did_not_run() {
        let steps = [
            (0, "succeeded"),
            (1, "dead"),
            (2, "pending"),
            (3, "pending"),
        ];
        let phases = ChainPhases::of(steps);
        assert_eq!(
            phases,
            ChainPhases {
                succeeded: vec![0],
                failed: vec![1],
                not_run: vec![2, 3],
                in_progress: vec![],
            }
        );
        assert_eq!(phases.outcome("failed"), "partial");
        let first_died = ChainPhases::of([(0, "dead"), (1, "pending")]);
        assert_eq!(first_died.outcome("failed"), "failed");
        let skipped = ChainPhases::of([(0, "succeeded"), (1, "skipped"), (2, "retrying")]);
        assert_eq!((skipped.not_run, skipped.in_progress), (vec![1], vec![2]));
        let done = ChainPhases::of([(0, "succeeded"), (1, "succeeded")]);
        assert_eq!(done.outcome("succeeded"), "succeeded");
        assert_eq!(done.outcome("running"), "running");
    }
}
