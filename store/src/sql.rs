//! Fixed text spliced into statements: status lists for `status IN (...)` guards, name lists
//! (families) for `family IN (...)`, the rows of a bound JSON array, and the guard of a consumer
//! batch's outcome rows. Safe to splice: `'static` names are the code's own words, never input.

use jobs_shared::job::lifecycle::JobStatus;

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

/// `WITH o AS ...`: a CTE of the rows of the JSON array bound as `param`, each row (`o.value`)
/// rendered once. A row read straight from `json_each` is rendered again at every reference,
/// and the hot statements read several fields of each row by position (`o.value ->> 3`):
/// materialized, enqueue's INSERT takes a quarter less time and the record's UPDATE a fifth less
/// (measured on SQLite, docs/performance.md "Benchmark").
pub fn rows_cte(param: &str) -> String {
    format!("WITH o AS MATERIALIZED (SELECT value FROM json_each({param}))")
}

/// `json_each(rows) o JOIN jobs j`: each row of a consumer batch's outcome array `rows` (an SQL
/// expression, `?1` in the statement; `o.value`: [id, run, ...], see
/// `jobs::job_set_outcome_many`) with its job `j`, while that job is `status` under that run.
/// With `running`, the job update's guard, which a failure's run record repeats (it is written
/// before that update), so an attempt overtaken by a rescue or an operator's retry records
/// nothing; with `succeeded`, the jobs that update moved (`success_batches`). The unary `+`
/// keeps SQLite on the primary key.
pub fn outcome_rows_of_jobs(rows: &str, status: JobStatus) -> String {
    format!(
        "json_each({rows}) o JOIN jobs j ON j.id = o.value ->> 0 \
         AND +j.status = '{status}' AND j.runs = o.value ->> 1"
    )
}

/// True for a `jobs` row that a pause covers; spliced into the claim, the resume and priority
/// aging. It begins with whether anything at all is paused (nearly never), which depends on no
/// row, so SQLite reads it once per statement: with no pause at all, no row looks up the
/// pauses of its type and family.
pub(crate) const PAUSED_JOB_SQL: &str = "(EXISTS (SELECT 1 FROM pauses) AND \
     EXISTS (SELECT 1 FROM pauses p WHERE \
     (p.kind = 'type' AND p.name = jobs.type) OR (p.kind = 'family' AND p.name = jobs.family)))";

#[cfg(test)]
mod tests {
    use super::*;
    use jobs_shared::job::lifecycle::sources_of;
    use JobStatus::*;

    #[test]
    fn status_list_quotes_each_status() {
        assert_eq!(status_list(&sources_of(Running)), "'queued', 'retrying'");
        assert_eq!(status_list(&[Dead]), "'dead'");
        assert_eq!(status_list(&[]), "");
        assert_eq!(waiting(), "'queued', 'retrying'");
    }
}
