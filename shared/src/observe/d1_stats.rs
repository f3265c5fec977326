//! D1 work done for one request or batch, counted from D1's own result meta. Round trips are
//! what cost latency on Cloudflare; rows read and written are what D1 bills.

/// Counts of D1 work; `add_round_trip` once per call to D1, with each statement's meta.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct D1Stats {
    pub round_trips: u32,
    pub rows_read: u64,
    pub rows_written: u64,
}

impl D1Stats {
    /// Records one round trip; `metas` holds each statement's (rows_read, rows_written) as D1's
    /// result meta reports them (absent counts as zero).
    pub fn add_round_trip(
        &mut self,
        metas: impl IntoIterator<Item = (Option<usize>, Option<usize>)>,
    ) {
        self.round_trips += 1;
        for (read, written) in metas {
            self.rows_read += read.unwrap_or(0) as u64;
            self.rows_written += written.unwrap_or(0) as u64;
        }
    }

    /// Adds the work counted elsewhere (e.g. a batch's lease heartbeats).
    pub fn merge(&mut self, other: &D1Stats) {
        self.round_trips += other.round_trips;
        self.rows_read += other.rows_read;
        self.rows_written += other.rows_written;
    }

    /// The value of a `Server-Timing` header entry, readable in browser dev tools and by the
    /// benchmark: `d1;desc="round_trips=1 rows_read=0 rows_written=3"`.
    pub fn server_timing(&self) -> String {
        format!(
            "d1;desc=\"round_trips={} rows_read={} rows_written={}\"",
            self.round_trips, self.rows_read, self.rows_written
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_statements_and_counts_calls() {
        let mut stats = D1Stats::default();
        stats.add_round_trip([(Some(1), Some(2)), (Some(3), None), (None, Some(4))]);
        stats.add_round_trip([]);
        assert_eq!(
            stats,
            D1Stats {
                round_trips: 2,
                rows_read: 4,
                rows_written: 6
            }
        );
        assert_eq!(
            stats.server_timing(),
            "d1;desc=\"round_trips=2 rows_read=4 rows_written=6\""
        );
    }
}
