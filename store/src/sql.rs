//! Fixed names spliced into statement text: status lists for `status IN (...)` guards and name
//! lists (families) for `family IN (...)`. Safe to splice: `'static` names are the code's own
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
