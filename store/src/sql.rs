//! Fixed text spliced into statements: status lists for `status IN (...)` guards, name lists
//! (families) for `family IN (...)`, and the guard of a consumer batch's outcome rows. Safe to splice: `'static` names are the code's own
//! words, never input.

use jobs_shared::JobStatus;

/// `statuses` as an SQL list, e.g. `'queued', 'retrying'`.
pub fn status_list(statuses: &[JobStatus]) -> String {
    name_list(statuses.iter().map(|s| s.as_str()))
}

/// Fixed names as an SQL list for `... IN (...)`, e.g. `'low', 'bulk'`.
pub fn name_list(names: impl IntoIterator<Item = &'static str>) -> String {
    names
        .into_iter()
        .map(|name| format!("'{name}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The states that wait for a message: `'queued', 'retrying'`.
pub fn waiting() -> String {
    status_list(&[JobStatus::Queued, JobStatus::Retrying])
}

/// `json_each(?1) o JOIN jobs j`: each row of a consumer batch's outcome array (`o.value`:
/// [id, run, ...], see `jobs::job_set_outcome_many`) with its job `j`, while that job is still
/// `running` under that run: the guard every statement recording an attempt repeats, so an
/// attempt overtaken by a rescue or an operator's retry records nothing. The unary `+` keeps
/// SQLite on the primary key.
pub fn outcome_rows_of_running_jobs() -> String {
    format!(
        "json_each(?1) o JOIN jobs j ON j.id = o.value ->> 0 \
         AND +j.status = '{}' AND j.runs = o.value ->> 1",
        JobStatus::Running
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobs_shared::sources_of;
    use JobStatus::*;

    #[test]
    fn status_list_quotes_each_status() {
        assert_eq!(status_list(&sources_of(Running)), "'queued', 'retrying'");
        assert_eq!(status_list(&[Dead]), "'dead'");
        assert_eq!(status_list(&[]), "");
        assert_eq!(waiting(), "'queued', 'retrying'");
    }
}
