// Cloudflare's list prices on the Workers Paid plan, the one place the benchmark's cost figures
// take them from. Marginal prices: what one more unit costs once the plan's included amounts
// (10 M requests, 50 M rows written, 25 B rows read, 1 M queue operations, 20 M log events,
// 10 M data points, 5 GB a month) are spent; those amounts are not subtracted. CPU time ($0.02
// per million CPU ms) is not priced: local workerd's CPU is not what Cloudflare bills.
//
// Checked on 2026-11-25 against these pages (the copies read carry no date of their own; Workers
// Logs has billed since 2024-11-01, and counts each invocation's own log as one event beside
// every console line: "Each request emits 1 execution log and 1 console.log" makes 2 events):
//   https://developers.cloudflare.com/workers/platform/pricing/         requests
//   https://developers.cloudflare.com/d1/platform/pricing/              rows written, rows read, storage
//   https://developers.cloudflare.com/queues/pricing/                   operations: one per 64 KB written,
//                                                                        read or deleted; each retry one more read
//   https://developers.cloudflare.com/workers/observability/logs/workers-logs/   log events
//   https://developers.cloudflare.com/analytics/analytics-engine/pricing/        data points written
//   https://developers.cloudflare.com/durable-objects/platform/pricing/          requests, SQLite rows
//                                                                        written (duration, $12.50 per
//                                                                        million GB-s, is not priced:
//                                                                        a limiter's few ms per call)
export const PRICES_CHECKED = "2026-11-25";

/** USD per `per` units; `what` is the unit as the benchmark counts it. */
export const PRICES = {
  requests: { usd: 0.3, per: 1e6, what: "Worker invocations: each HTTP request and each queue batch" },
  d1_rows_written: { usd: 1.0, per: 1e6, what: "D1 rows written, indexes included (D1's own meta)" },
  d1_rows_read: { usd: 0.001, per: 1e6, what: "D1 rows read (D1's own meta)" },
  queue_operations: { usd: 0.4, per: 1e6, what: "queue operations: a write, a read per delivery, a delete (messages < 64 KB)" },
  log_events: { usd: 0.6, per: 1e6, what: "Workers Logs events: every console line and each invocation's own log" },
  analytics_points: { usd: 0.25, per: 1e6, what: "Analytics Engine data points written" },
  d1_storage: { usd: 0.75, per: 1e9, what: "D1 storage, per GB (10^9 bytes) kept for a month" },
  do_requests: { usd: 0.15, per: 1e6, what: "Durable Object requests: flow control's calls to its keys' limiters" },
  do_rows_written: { usd: 1.0, per: 1e6, what: "Durable Object SQLite rows written: a limiter stores its key's state once per call, at most" },
};
