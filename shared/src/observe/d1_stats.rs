//! D1 work done for one request or batch, counted from D1's own result meta. Round trips are
//! what cost latency on Cloudflare; rows read and written are what D1 bills; the SQL time is
//! what D1 itself spent, the one writer's time behind the capacity model (docs/performance.md
//! "Benchmark").

/// Counts of D1 work; `add_round_trip` once per call to D1, with each statement's meta.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct D1Stats {
    pub round_trips: u32,
    pub rows_read: u64,
    pub rows_written: u64,
    /// Microseconds D1 spent running the statements (the metas' `duration`).
    pub sql_us: u64,
}

/// One statement's meta as D1 reports it: rows read, rows written, duration (ms).
pub type StatementMeta = (Option<usize>, Option<usize>, Option<f64>);

impl D1Stats {
    /// Records one round trip; `metas` holds each statement's meta as D1 reports it (absent
    /// counts as zero).
    pub fn add_round_trip(&mut self, metas: impl IntoIterator<Item = StatementMeta>) {
        self.round_trips += 1;
        for (read, written, ms) in metas {
            self.rows_read += read.unwrap_or(0) as u64;
            self.rows_written += written.unwrap_or(0) as u64;
            self.sql_us += (ms.unwrap_or(0.0).max(0.0) * 1000.0).round() as u64;
        }
    }

    /// The SQL time in ms, to the microsecond.
    pub fn sql_ms(&self) -> f64 {
        self.sql_us as f64 / 1000.0
    }

    /// Adds the work counted elsewhere (e.g. a batch's lease heartbeats).
    pub fn merge(&mut self, other: &D1Stats) {
        self.round_trips += other.round_trips;
        self.rows_read += other.rows_read;
        self.rows_written += other.rows_written;
        self.sql_us += other.sql_us;
    }

    /// The value of a `Server-Timing` header entry, readable in browser dev tools and by the
    /// benchmark: `d1;desc="round_trips=1 rows_read=0 rows_written=2 sql_ms=0.25"`.
    pub fn server_timing(&self) -> String {
        format!(
            "d1;desc=\"round_trips={} rows_read={} rows_written={} sql_ms={}\"",
            self.round_trips,
            self.rows_read,
            self.rows_written,
            self.sql_ms()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_statements_and_counts_calls() {
        let mut stats = D1Stats::default();
        stats.add_round_trip([
            (Some(1), Some(2), Some(0.25)),
            (Some(3), None, None),
            (None, Some(4), Some(0.0015)),
        ]);
        stats.add_round_trip([]);
        assert_eq!(
            stats,
            D1Stats {
                round_trips: 2,
                rows_read: 4,
                rows_written: 6,
                sql_us: 252,
            }
        );
        assert_eq!(
            stats.server_timing(),
            "d1;desc=\"round_trips=2 rows_read=4 rows_written=6 sql_ms=0.252\""
        );
    }
}
