// What a workflow costs (docs/app-guide.md "Workflows"), counted as the rest of the benchmark
// counts (D1's own result meta: the producer's Server-Timing header and the consumer's per-batch
// log lines; queue operations and invocations from the same lines), on the built workers on
// local workerd:
// - per step: chains of `noop` steps, each after the first taking the step before it as its
//   input, priced per step as a job is;
// - a join: one workflow whose `group` fans out to `branches` noop branches over a list a first
//   `http` step fetched, and joins them into a last step that takes the group's report; counted
//   whole (its D1 round trips, rows and consumer batches) and priced per workflow and per branch.
import { d1Stats, logCollector, startPlatform, waitFor, TOKENS } from "../tests/support/platform.mjs";
import { priced, usagePerJob } from "./cost.mjs";
import { pool, round } from "./measure.mjs";

const HEADERS = { authorization: `Bearer ${TOKENS.enqueue}`, "content-type": "application/json" };

/** The consumer's job batches and their D1 counts, summed. */
function batchTotals(logs) {
  const batches = logs.events("batch.completed").filter((b) => !b.queue.endsWith("-dlq"));
  const sum = (field) => batches.reduce((a, b) => a + (b[field] ?? 0), 0);
  return { batches, roundTrips: sum("d1.round_trips"), rowsWritten: sum("d1.rows_written"), rowsRead: sum("d1.rows_read") };
}

/** Chains of `steps` noop steps, `chains` of them, 100 to an enqueue request: their cost per step. */
async function perStep(p, logs, chains, steps) {
  const chain = {
    type: "noop",
    name: "s0",
    steps: Array.from({ length: steps - 1 }, (_, i) => ({ type: "noop", name: `s${i + 1}`, inputs: [`s${i}`] })),
  };
  logs.clear();
  const requests = Math.ceil(chains / 100);
  const enqueued = [];
  await pool(requests, 4, async (i) => {
    const n = Math.min(100, chains - i * 100);
    const body = JSON.stringify({ jobs: Array.from({ length: n }, () => chain) });
    const res = await p.mf.dispatchFetch("http://jobs.local/v1/jobs/batch", { method: "POST", headers: HEADERS, body });
    if (res.status !== 202) throw new Error(`enqueue: ${res.status} ${await res.text()}`);
    enqueued.push(d1Stats(res.headers));
  });
  const ended = () => p.count("SELECT COUNT(*) FROM jobs WHERE chain_status = 'succeeded'");
  await waitFor(async () => (await ended()) >= chains, { what: `${chains} chains`, everyMs: 1000, timeoutMs: 60_000 + chains * steps * 50 });
  const total = chains * steps;
  const { batches, roundTrips, rowsWritten, rowsRead } = batchTotals(logs);
  const run = {
    steps: total,
    d1_round_trips_per_step: round((requests + roundTrips) / total, 3),
    d1_rows_written_per_job: round((enqueued.reduce((a, s) => a + s.own_rows_written, 0) + rowsWritten) / total),
    d1_rows_read_per_job: round((enqueued.reduce((a, s) => a + s.own_rows_read, 0) + rowsRead) / total),
    consumer_batches: batches.length,
    ...usagePerJob({ jobs: total, requests, batches, logLines: logs.count(), storedBytes: 0 }),
  };
  return { ...run, ...priced(run) };
}

/** One workflow fanning out to `branches` branches and joining them: its whole cost. */
async function join(p, logs, app, branches) {
  app.script("/bench/list", [{ status: 200, body: { items: Array.from({ length: branches }, (_, i) => i) } }]);
  logs.clear();
  const workflow = {
    type: "http",
    name: "list",
    payload: { url: app.url("/bench/list") },
    steps: [
      { type: "group", name: "each", payload: { for_each: "body.items", job: { type: "noop" } } },
      { type: "noop", name: "join", inputs: ["each"] },
    ],
  };
  const started = Date.now();
  const res = await p.mf.dispatchFetch("http://jobs.local/v1/jobs", { method: "POST", headers: HEADERS, body: JSON.stringify(workflow) });
  if (res.status !== 202) throw new Error(`enqueue: ${res.status} ${await res.text()}`);
  const enqueue = d1Stats(res.headers);
  const { id } = await res.json();
  await waitFor(async () => (await p.count("SELECT chain_status = 'succeeded' FROM jobs WHERE id = ?", id)) === 1, {
    what: `a join of ${branches} branches`,
    everyMs: 500,
    timeoutMs: 60_000 + branches * 100,
  });
  const { batches, roundTrips, rowsWritten, rowsRead } = batchTotals(logs);
  const jobs = branches + 3;
  const usage = usagePerJob({ jobs: 1, requests: 1, batches, logLines: logs.count(), storedBytes: 0 });
  const workflowRun = {
    ...usage,
    d1_rows_written_per_job: enqueue.own_rows_written + rowsWritten,
    d1_rows_read_per_job: enqueue.own_rows_read + rowsRead,
  };
  const cost = priced(workflowRun).usd_per_million_jobs;
  return {
    branches,
    jobs,
    seconds: round((Math.max(...batches.map((b) => b.logged_at)) - started) / 1000),
    d1_round_trips: 1 + roundTrips,
    d1_round_trips_max_per_batch: Math.max(...batches.map((b) => b["d1.round_trips"])),
    d1_rows_written: workflowRun.d1_rows_written_per_job,
    d1_rows_read: workflowRun.d1_rows_read_per_job,
    consumer_batches: batches.length,
    queue_operations: usage.queue_operations_per_job,
    usd_per_workflow: round(cost.total / 1e6, 6),
    usd_per_million_branches: round(cost.total / branches, 2),
  };
}

/** Both measures, on one platform started for them. */
export async function workflowCosts({ app, chains = 100, steps = 5, branches = 1_000 }) {
  const logs = logCollector();
  const p = await startPlatform({ onLog: logs.onLog });
  try {
    return { per_step: await perStep(p, logs, chains, steps), join: await join(p, logs, app, branches) };
  } finally {
    await p.dispose();
  }
}
