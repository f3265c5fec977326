// Dollars per million jobs at the list prices in prices.mjs, from what an end-to-end run counted
// (never assumed): invocations, D1's own row counts, queue operations and flow control's limiter
// calls from the consumer's `batch.completed` lines, and every line the Workers logged.
import { PRICES } from "./prices.mjs";
import { round } from "./measure.mjs";

/** The priced units one job of a run used: the figures its cost is computed from. */
const PER_JOB = {
  requests: "requests_per_job",
  d1_rows_written: "d1_rows_written_per_job",
  d1_rows_read: "d1_rows_read_per_job",
  queue_operations: "queue_operations_per_job",
  log_events: "log_events_per_job",
  analytics_points: "analytics_points_per_job",
  do_requests: "do_requests_per_job",
  do_rows_written: "do_rows_written_per_job",
};

/**
 * What a run's job batches and requests add up to, per job: `batches` are the consumer's
 * `batch.completed` lines, `requests` the enqueue requests, `logLines` every console line the
 * Workers wrote. Queues bill a write when a message is sent, a read for each delivery and a
 * delete when it is acked; a retried delivery is read again, so every message is written and
 * deleted once and read once more per retry.
 */
export function usagePerJob({ jobs, requests, batches, logLines, storedBytes }) {
  const sum = (field) => batches.reduce((a, b) => a + (b[field] ?? 0), 0);
  const deliveries = sum("messages");
  const messages = deliveries - sum("jobs.retried");
  const invocations = requests + batches.length;
  const perJob = (x) => round(x / jobs, 3);
  return {
    requests_per_job: perJob(invocations),
    queue_operations_per_job: perJob(messages + deliveries + messages),
    // Each invocation writes its own log, besides the lines its code logs.
    log_events_per_job: perJob(logLines + invocations),
    // One data point per recorded attempt (consumer/src/job_events.rs).
    analytics_points_per_job: perJob(sum("jobs.succeeded") + sum("jobs.retried") + sum("jobs.dead") + sum("jobs.skipped")),
    stored_bytes_per_job: perJob(storedBytes),
    // Flow control's limiter calls (`flow.limiter_calls`), each a Durable Object request that
    // writes its key's state once at most.
    do_requests_per_job: perJob(sum("flow.limiter_calls")),
    do_rows_written_per_job: perJob(sum("flow.limiter_calls")),
  };
}

/** $ per million jobs, item by item and in total, for a run's per-job figures. */
function costPerMillionJobs(run) {
  const items = Object.fromEntries(
    Object.entries(PER_JOB).map(([price, field]) => [price, round((run[field] * 1e6 * PRICES[price].usd) / PRICES[price].per, 4)]),
  );
  return {
    ...items,
    total: round(Object.values(items).reduce((a, b) => a + b, 0), 2),
    // Apart from the total: it depends on how long the jobs are kept.
    d1_storage_per_month_kept: round((run.stored_bytes_per_job * 1e6 * PRICES.d1_storage.usd) / PRICES.d1_storage.per, 4),
  };
}

/** A run's per-job figures that are billed, and what they cost per million jobs. */
export function priced(run) {
  const perJob = Object.fromEntries([...Object.values(PER_JOB), "stored_bytes_per_job"].map((field) => [field, run[field]]));
  return { ...perJob, usd_per_million_jobs: costPerMillionJobs(perJob) };
}
