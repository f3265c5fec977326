//! The Analytics Engine data points both Workers write (docs/operating.md "Analytics Engine"):
//! one per recorded attempt (consumer, dataset `jobs_executions`) and one per family a sweep
//! tick (producer, dataset `jobs_backlog`). Each layout is data: which column holds what, in the
//! order the point is built, so the SQL of docs/operating.md "Analytics Engine" and the writers
//! cannot disagree (the test below reads its queries).

/// A point's columns, in order, and what each holds.
pub struct Layout {
    pub index: &'static str,
    pub blobs: &'static [&'static str],
    pub doubles: &'static [&'static str],
}

/// Per recorded attempt.
pub const EXECUTION: Layout = Layout {
    index: "job_type",
    blobs: &["family", "outcome", "error_class"],
    doubles: &["duration_ms", "attempt", "cost_cents"],
};

/// Per family, once a sweep tick.
pub const BACKLOG: Layout = Layout {
    index: "family",
    blobs: &["family"],
    doubles: &["backlog", "running"],
};

/// One point's values, in its layout's order.
pub struct Point<'a> {
    pub index: &'a str,
    pub blobs: Vec<&'a str>,
    pub doubles: Vec<f64>,
}

/// One attempt, as its point ([`EXECUTION`]) records it.
pub struct Execution<'a> {
    pub job_type: &'a str,
    pub family: &'a str,
    pub outcome: &'a str,
    /// Empty for a success.
    pub error_class: &'a str,
    pub duration_ms: f64,
    pub attempt: f64,
    pub cost_cents: f64,
}

/// An attempt's point ([`EXECUTION`]).
pub fn execution_point<'a>(e: &Execution<'a>) -> Point<'a> {
    Point {
        index: e.job_type,
        blobs: vec![e.family, e.outcome, e.error_class],
        doubles: vec![e.duration_ms, e.attempt, e.cost_cents],
    }
}

/// A family's backlog point ([`BACKLOG`]).
pub fn backlog_point(family: &str, backlog: f64, running: f64) -> Point<'_> {
    Point {
        index: family,
        blobs: vec![family],
        doubles: vec![backlog, running],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `column AS alias` in the docs' queries over `dataset`, e.g. ("blob1", "family").
    fn aliases<'a>(readme: &'a str, dataset: &str) -> Vec<(&'a str, &'a str)> {
        let from = format!("FROM {dataset} ");
        readme
            .split(';')
            .filter(|query| query.contains(&from))
            .flat_map(|query| {
                let words: Vec<&str> = query.split_whitespace().collect();
                words
                    .windows(3)
                    .filter(|w| w[1] == "AS")
                    .map(|w| {
                        (
                            w[0].trim_matches(|c| c == ',' || c == '('),
                            w[2].trim_end_matches(','),
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn column<'a>(layout: &'a Layout, name: &str) -> Option<&'a str> {
        let nth = |prefix: &str, list: &'a [&'a str]| {
            name.strip_prefix(prefix)
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| list.get(n.checked_sub(1)?).copied())
        };
        match name {
            "index1" => Some(layout.index),
            _ => nth("blob", layout.blobs).or_else(|| nth("double", layout.doubles)),
        }
    }

    #[test]
    fn the_readme_queries_read_the_columns_the_writers_fill() {
        let readme = include_str!("../../../docs/operating.md");
        for (dataset, layout) in [("jobs_executions", &EXECUTION), ("jobs_backlog", &BACKLOG)] {
            let named = aliases(readme, dataset);
            assert!(!named.is_empty(), "docs/operating.md queries {dataset}");
            for (col, alias) in named {
                if let Some(holds) = column(layout, col) {
                    assert_eq!(
                        holds, alias,
                        "{dataset}: {col} holds {holds}, docs/operating.md calls it {alias}"
                    );
                }
            }
        }
        let point = execution_point(&Execution {
            job_type: "noop",
            family: "default",
            outcome: "succeeded",
            error_class: "",
            duration_ms: 1.0,
            attempt: 1.0,
            cost_cents: 0.0,
        });
        assert_eq!(point.blobs.len(), EXECUTION.blobs.len());
        assert_eq!(point.doubles.len(), EXECUTION.doubles.len());
        assert_eq!(
            backlog_point("low", 1.0, 0.0).doubles.len(),
            BACKLOG.doubles.len()
        );
    }
}
