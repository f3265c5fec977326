//! What an operator may do to one job, checked against the state machine before any SQL runs.

use crate::job::lifecycle::{sources_of, transition, JobStatus};
use crate::request::api_error::ApiError;
use serde_json::Value;

/// The statuses an operator may set directly: requeue (retry/replay), cancel, skip. The others
/// are the consumer's to set, as attempts start and end.
pub const OPERATOR_TARGETS: [JobStatus; 3] =
    [JobStatus::Queued, JobStatus::Cancelled, JobStatus::Skipped];

/// The states from which an operator's move to `to` may start: the state machine's sources,
/// except that a running attempt is never requeued under its own feet (its lease owns the job).
pub fn operator_sources(to: JobStatus) -> Vec<JobStatus> {
    sources_of(to)
        .into_iter()
        .filter(|&from| !(to == JobStatus::Queued && from == JobStatus::Running))
        .collect()
}

/// The states an operator's move to `to` takes jobs from: the state machine's, and for a
/// requeue (retry, or set status `queued`) `queued` itself while a job's `run_at` is ahead
/// (delayed at enqueue, or a lost attempt's re-run waiting out its backoff). A move to the state
/// a job is in is no transition: it makes the job due now, its attempts reset as for any retry
/// (docs/app-guide.md "Lifecycle").
pub fn move_sources(to: JobStatus) -> Vec<JobStatus> {
    let mut sources = operator_sources(to);
    if to == JobStatus::Queued {
        sources.push(to);
    }
    sources
}

/// What an operator may do to a job in `status` (`due_later`: its `run_at` is ahead), as the
/// admin job view lists it (the dashboard offers only these): `retry`, `cancel` and `skip` where
/// [`move_sources`] allows the move (a move to its own state only while the job is due later),
/// `priority` and `boost` while the job is live (docs/operating.md "Operating it: admin API and
/// dashboard").
pub fn operator_actions(status: JobStatus, due_later: bool) -> Vec<&'static str> {
    let moves = [
        ("retry", JobStatus::Queued),
        ("cancel", JobStatus::Cancelled),
        ("skip", JobStatus::Skipped),
    ];
    let mut actions: Vec<&'static str> = (moves.into_iter())
        .filter(|&(_, to)| move_sources(to).contains(&status) && (status != to || due_later))
        .map(|(action, _)| action)
        .collect();
    if status.is_live() {
        actions.extend(["priority", "boost"]);
    }
    actions
}

/// 409 naming both states when the move is not allowed.
pub fn check_move(from: JobStatus, to: JobStatus) -> Result<(), ApiError> {
    // The field is the job's own status: what keeps it from moving.
    let illegal =
        |message: String| ApiError::new(409, "illegal_transition", message).with_field("status");
    transition(from, to).map_err(|e| illegal(e.to_string()))?;
    if operator_sources(to).contains(&from) {
        Ok(())
    } else {
        Err(illegal(format!(
            "cannot move a job from {from} to {to}: its attempt is running"
        )))
    }
}

/// `{"status": "..."}` for the set-status route.
pub fn parse_target(body: &Value) -> Result<JobStatus, ApiError> {
    let names = OPERATOR_TARGETS.map(JobStatus::as_str).join(", ");
    let status = required(body, "status")?
        .as_str()
        .and_then(JobStatus::parse)
        .ok_or_else(|| invalid("status", format!("status must be one of {names}")))?;
    if OPERATOR_TARGETS.contains(&status) {
        Ok(status)
    } else {
        Err(invalid(
            "status",
            format!("{status} is set by the consumer; an operator may set {names}"),
        ))
    }
}

/// An integer field within `range`, e.g. `priority` 0-100 or a boost's `by` 1-100.
pub fn parse_int(
    body: &Value,
    field: &str,
    range: std::ops::RangeInclusive<i64>,
) -> Result<i64, ApiError> {
    let n = required(body, field)?
        .as_i64()
        .ok_or_else(|| invalid(field, format!("{field} must be an integer")))?;
    if range.contains(&n) {
        Ok(n)
    } else {
        Err(ApiError::new(
            422,
            "out_of_range",
            format!("{field} must be {} to {}", range.start(), range.end()),
        )
        .with_field(field))
    }
}

fn required<'a>(body: &'a Value, field: &str) -> Result<&'a Value, ApiError> {
    body.get(field)
        .ok_or_else(|| invalid(field, format!("{field} is required")))
}

fn invalid(field: &str, message: String) -> ApiError {
    crate::request::field_error::invalid("invalid_field", field, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use JobStatus::*;

    #[test]
    fn operators_requeue_dead_scheduled_and_retrying_but_not_running_jobs() {
        assert_eq!(operator_sources(Queued), [Scheduled, Dead, Retrying]);
        assert_eq!(operator_sources(Cancelled), [Scheduled, Queued, Retrying]);
        assert!(check_move(Dead, Queued).is_ok());
        let e = check_move(Running, Queued).unwrap_err();
        assert_eq!((e.status, e.code), (409, "illegal_transition"));
        assert!(e.message.contains("running") && e.message.contains("queued"));
        let e = check_move(Succeeded, Cancelled).unwrap_err();
        assert_eq!(e.message, "cannot move a job from succeeded to cancelled");
    }

    #[test]
    fn a_job_lists_the_actions_its_status_allows() {
        assert_eq!(operator_actions(Dead, false), ["retry"]);
        assert_eq!(
            operator_actions(Retrying, false),
            ["retry", "cancel", "skip", "priority", "boost"]
        );
        assert!(operator_actions(Succeeded, false).is_empty());
        assert_eq!(
            operator_actions(Running, false),
            ["skip", "priority", "boost"]
        );
        let queued = operator_actions(Queued, false);
        assert_eq!(queued, ["cancel", "skip", "priority", "boost"]);
        // A queued job delayed at enqueue can be retried: made due now.
        let delayed = operator_actions(Queued, true);
        assert_eq!(delayed, ["retry", "cancel", "skip", "priority", "boost"]);
        assert_eq!(
            operator_actions(Running, true),
            ["skip", "priority", "boost"]
        );
        // Each other listed move is one check_move allows.
        for status in JobStatus::ALL {
            for (action, to) in [("retry", Queued), ("cancel", Cancelled), ("skip", Skipped)] {
                let listed = operator_actions(status, false).contains(&action);
                assert_eq!(
                    listed,
                    check_move(status, to).is_ok(),
                    "{action} from {status}"
                );
            }
        }
        assert_eq!(move_sources(Queued), [Scheduled, Dead, Retrying, Queued]);
        assert_eq!(move_sources(Cancelled), operator_sources(Cancelled));
    }

    #[test]
    fn targets_are_the_operators_own() {
        assert_eq!(parse_target(&json!({"status": "cancelled"})), Ok(Cancelled));
        for bad in [
            json!({"status": "succeeded"}),
            json!({"status": 1}),
            json!({}),
        ] {
            let e = parse_target(&bad).unwrap_err();
            assert_eq!((e.status, e.field.as_deref()), (422, Some("status")));
        }
    }

    #[test]
    fn integers_are_range_checked() {
        assert_eq!(
            parse_int(&json!({"priority": 100}), "priority", 0..=100),
            Ok(100)
        );
        let e = parse_int(&json!({"priority": 101}), "priority", 0..=100).unwrap_err();
        assert_eq!(e.code, "out_of_range");
        let e = parse_int(&json!({"priority": "5"}), "priority", 0..=100).unwrap_err();
        assert_eq!(e.code, "invalid_field");
    }
}
