//! The partial indexes over `jobs` (migration 0015, docs/performance.md "Cost"). SQLite uses a
//! partial index only for a statement whose WHERE repeats the index's own condition, so each
//! statement that needs one names it (`INDEXED BY`: a statement that could not use it fails,
//! at build time for a checked one, rather than scanning) and repeats its condition word for
//! word: `jobs INDEXED BY jobs_unfinished WHERE finished_at IS NULL`, `jobs INDEXED BY
//! jobs_waiting WHERE status IN ('scheduled', 'retrying')`, `jobs INDEXED BY jobs_ended WHERE
//! finished_at IS NOT NULL AND status <> 'succeeded'`. The operator's lists, built at run
//! time, pick theirs here.

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

    /// Each index as created, and as the statements that read it repeat it.
    #[test]
    fn each_index_is_created_with_the_condition_its_statements_repeat() {
        let migration = include_str!("../../../migrations/0015_happy_path_indexes.sql");
        let statements: String = migration
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect::<Vec<_>>()
            .join(" ");
        let statements = statements.split_whitespace().collect::<Vec<_>>().join(" ");
        let waiting = PartialIndex {
            name: "jobs_waiting",
            term: "status IN ('scheduled', 'retrying')",
        };
        let sources = [
            include_str!("sweep.rs"),
            include_str!("counts.rs"),
            include_str!("rescue.rs"),
            include_str!("chain.rs"),
            include_str!("../job_minutes.rs"),
        ]
        .map(crate::sql::written)
        .concat();
        for index in [&UNFINISHED, &waiting, &ENDED] {
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
            let read = format!("INDEXED BY {} WHERE", index.name);
            assert_eq!(
                sources.matches(&read).count(),
                sources.matches(&format!("{read} {}", index.term)).count(),
                "{}",
                index.name
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
