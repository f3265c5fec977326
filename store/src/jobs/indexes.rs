//! The partial indexes over `jobs` (migration 0015, docs/performance.md "Cost"). SQLite uses a
//! partial index only for a statement whose WHERE repeats the index's own condition, so each
//! statement that needs one reads `FROM` [`PartialIndex::rows`]: the index named (`INDEXED BY`: a
//! statement that could not use it fails rather than scanning) and its condition repeated.

use jobs_shared::job::lifecycle::JobStatus;

pub struct PartialIndex {
    pub name: &'static str,
    /// The index's WHERE, word for word.
    pub term: &'static str,
}

impl PartialIndex {
    /// `jobs INDEXED BY <name> WHERE <term>`: after `FROM`, the rows the index holds, for the
    /// statement to narrow with `AND ...`.
    pub fn rows(&self) -> String {
        format!("jobs INDEXED BY {} WHERE {}", self.name, self.term)
    }
}

/// Every live job, by `run_at`: a job is live exactly while `finished_at` is NULL.
pub const UNFINISHED: PartialIndex = PartialIndex {
    name: "jobs_unfinished",
    term: "finished_at IS NULL",
};

/// `scheduled` and `retrying` jobs, by (status, run_at): what the sweep sends when due.
pub const WAITING: PartialIndex = PartialIndex {
    name: "jobs_waiting",
    term: "status IN ('scheduled', 'retrying')",
};

/// Jobs that ended without succeeding (dead, cancelled, skipped), by (status, finished_at).
pub const ENDED: PartialIndex = PartialIndex {
    name: "jobs_ended",
    term: "finished_at IS NOT NULL AND status <> 'succeeded'",
};

/// The index that holds every job in any of `statuses`, if one does (none for `succeeded`,
/// whose jobs are read through the primary key).
pub fn holding(statuses: &[JobStatus]) -> Option<&'static PartialIndex> {
    if statuses.is_empty() {
        None
    } else if statuses.iter().all(|s| s.is_live()) {
        Some(&UNFINISHED)
    } else if statuses
        .iter()
        .all(|s| !s.is_live() && *s != JobStatus::Succeeded)
    {
        Some(&ENDED)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use JobStatus::*;

    #[test]
    fn each_index_is_created_with_the_condition_its_statements_repeat() {
        let migration = include_str!("../../../migrations/0015_happy_path_indexes.sql");
        let statements: String = migration
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect::<Vec<_>>()
            .join(" ");
        let statements = statements.split_whitespace().collect::<Vec<_>>().join(" ");
        for index in [&UNFINISHED, &WAITING, &ENDED] {
            let create = format!("CREATE INDEX {} ON jobs", index.name);
            let at = statements
                .find(&create)
                .unwrap_or_else(|| panic!("{create}"));
            let rest = &statements[at..];
            let end = rest.find(';').unwrap();
            assert!(
                rest[..end].ends_with(&format!("WHERE {}", index.term)),
                "{}: {}",
                index.name,
                &rest[..end]
            );
        }
    }

    #[test]
    fn live_and_ended_statuses_have_an_index_succeeded_does_not() {
        assert_eq!(holding(&[Queued, Running]).unwrap().name, "jobs_unfinished");
        assert_eq!(holding(&[Dead, Cancelled]).unwrap().name, "jobs_ended");
        assert!(holding(&[Succeeded]).is_none());
        assert!(holding(&[Dead, Queued]).is_none());
        assert!(holding(&[]).is_none());
    }
}
