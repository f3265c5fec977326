// The black-box run (docs/performance.md "Benchmark"): the project as a new user runs it (`npm run
// dev`, i.e. scripts/dev.sh: one `wrangler dev`, logs as shipped) and, beside it, a minimal
// hand-written JavaScript pair (bench/handwritten) started the same way, each on a fresh local
// state. Both run at once and are driven by the same code over real HTTP with the tokens a user has
// (.dev.vars), one at a time, in alternation (the first side swaps every round, so a drifting
// machine favours neither): end to end (noop jobs in batches of 100, 4 requests at a time,
// timed until GET /v1/admin/stats counts them succeeded), then enqueue of 100 jobs per request
// (4 at a time) and of 1 (16 at a time), each phase once untimed first on both sides. On both
// sides wrangler's inspector is on the consumer (`startInspectingConsumer`).
import { deepStrictEqual } from "node:assert/strict";
import { join } from "node:path";
import { unstable_readConfig } from "wrangler";
import { ROOT, waitFor } from "../tests/support/platform.mjs";
import { devTokens } from "../scripts/dev-tokens.mjs";
import { startDevServer } from "../tests/support/dev_server.mjs";
import { PATIENCE_MS, WARM_UP_JOBS, alternate, endToEndPass, enqueuePhase, jobsBody, pairedRatio, round, warmUp } from "./measure.mjs";

/** Each side's dev script, and its consumer's config. */
const SIDES = {
  project: { script: "scripts/dev.sh", consumer: "consumer/wrangler.toml" },
  handwritten: { script: "bench/handwritten/dev.sh", consumer: "bench/handwritten/consumer.toml" },
};
const SIDES_ORDER = Object.keys(SIDES);
/** Starts of one side before its inspector is on its consumer (see `startInspectingConsumer`). */
const MAX_STARTS = 6;
const PHASES = ["e2e_noop", "enqueue_batch", "enqueue_single"];
const NOOP = { type: "noop", payload: {} };
const SINGLE_CONCURRENCY = 16;
const BATCH_CONCURRENCY = 4;
/** The pause between two reads of the stats while waiting for the jobs (one read at a time). */
const POLL_MS = 100;
/** How long a read before a pass may take before it counts as held by wrangler's proxy. */
const REFRESH_PATIENCE_MS = 5_000;

/** The hand-written consumer must consume as the project's default family does. */
function checkSameConsumerSettings() {
  const consumer = (config) =>
    unstable_readConfig({ config: join(ROOT, config) }).queues.consumers.find((c) => c.queue === "jobs-default");
  deepStrictEqual(
    consumer("bench/handwritten/consumer.toml"),
    consumer("consumer/wrangler.toml"),
    "bench/handwritten/consumer.toml must consume jobs-default as consumer/wrangler.toml does",
  );
}

/**
 * Starts `side` until wrangler's inspector is on its consumer, so that both sides pay it on the
 * same Worker: an inspected Worker pays an inspector event for each D1 call it makes and each line
 * it logs. wrangler attaches it to whichever Worker finished its build step last, which on both
 * sides is nearly always the consumer (it comes after the producer on the command line), but not
 * always. Returns the server and how many starts it took.
 */
async function startInspectingConsumer(side, log) {
  const { script, consumer } = SIDES[side];
  const name = unstable_readConfig({ config: join(ROOT, consumer) }).name;
  for (let start = 1; ; start++) {
    const server = await startDevServer(script, { cwd: ROOT });
    const inspected = await server.inspected().catch(async (e) => {
      await server.stop();
      throw e;
    });
    if (inspected === name) return { server, starts: start };
    await server.stop();
    if (start === MAX_STARTS) throw new Error(`${script}: wrangler's inspector was on ${inspected}, not ${name}, in ${start} starts`);
    log(`black box: ${side}'s inspector is on ${inspected}, not ${name}: started again`);
  }
}

/**
 * One side's driver over HTTP against the server at `url`: its warm-up, and each phase as a
 * pass of `jobs` jobs (end to end), or of `jobs` jobs 100 per request and up to 1,000 single
 * requests (enqueue).
 */
function driver(url, jobs) {
  const tokens = devTokens();
  const headers = (token) => ({ "content-type": "application/json", authorization: `Bearer ${token}` });
  const post = (path, body) => fetch(`${url}${path}`, { method: "POST", headers: headers(tokens.enqueue), body });
  const batch = (count) => post("/v1/jobs/batch", jobsBody(NOOP, count));
  const stats = (signal) => fetch(`${url}/v1/admin/stats`, { headers: headers(tokens.admin), signal });
  const succeeded = async () => {
    const res = await stats();
    if (res.status !== 200) throw new Error(`stats answered ${res.status}: ${await res.text()}`);
    return (await res.json()).families.default.counts.succeeded ?? 0;
  };
  const requests = Math.ceil(jobs / 100);
  // Before a pass, as many reads of the stats at once as the pass sends requests: wrangler dev's
  // proxy reuses its connections to the runtime, the most recently used first, and one left idle
  // about 5 s can be closed under the pass's first POST (see `runBlackBox`). The pass then starts
  // on connections just used. A read so cut the proxy holds until its next request arrives, then
  // sends again: a read unanswered in time is given up, and one more read makes it go.
  const read = () =>
    stats(AbortSignal.timeout(REFRESH_PATIENCE_MS))
      .then((res) => res.arrayBuffer())
      .then(() => true, () => false);
  const refreshed = async (concurrency) => {
    const answered = await Promise.all(Array.from({ length: concurrency }, read));
    if (answered.includes(false)) await read();
  };
  // An enqueue pass is timed to its last answer; its jobs are then left to drain (untimed), so
  // that every pass starts on an empty queue.
  const enqueue = async (send, shape) => {
    await refreshed(shape.concurrency);
    const before = await succeeded();
    const figures = await enqueuePhase(send, shape);
    const count = before + shape.requests * shape.perRequest;
    await waitFor(async () => (await succeeded()) >= count, { what: `${count} jobs at ${url}`, everyMs: POLL_MS, timeoutMs: PATIENCE_MS });
    return figures;
  };
  const single = { requests: Math.min(jobs, 1000), perRequest: 1, concurrency: SINGLE_CONCURRENCY };
  return {
    warmUp: () => warmUp(() => batch(WARM_UP_JOBS), succeeded),
    e2e_noop: async () => {
      await refreshed(BATCH_CONCURRENCY);
      return endToEndPass(() => batch(100), succeeded, { requests, concurrency: BATCH_CONCURRENCY, everyMs: POLL_MS });
    },
    enqueue_batch: () => enqueue(batch, { requests, perRequest: 100, concurrency: BATCH_CONCURRENCY }),
    enqueue_single: () => enqueue(() => post("/v1/jobs", JSON.stringify(NOOP)), single),
  };
}

/** Runs of the black box before one that a side's restart cut short fails the benchmark. */
const MAX_RUNS = 3;

/**
 * The black box (see `blackBoxRun`), run again from fresh starts when a side's `wrangler dev`
 * lost a request under a pass: its dev proxy answers 503 "Your worker restarted mid-request"
 * though nothing restarted, when its pooled connection to the Workers' runtime, idle about 5 s
 * (a side idles while the other is driven), is closed by both ends' 5 s idle timeouts as a POST
 * goes out on it (workers-sdk#14641; docs/development.md "Development notes"). Such a pass measures
 * neither side. Seen in 2 of 3 full runs and in 1 of 12 black-box runs alone before each pass began
 * with a round of reads (`driver`); both sides' last log lines are logged with it, and
 * `interrupted` counts the runs it cut.
 */
export async function runBlackBox({ jobs, rounds, log }) {
  checkSameConsumerSettings();
  for (let run = 1; ; run++) {
    try {
      return { ...(await blackBoxRun({ jobs, rounds, log })), interrupted: run - 1 };
    } catch (e) {
      if (!e.message.includes("restarted mid-request") || run === MAX_RUNS) throw e;
      log(`black box: a side's wrangler dev lost a request under a pass (${e.message.split("\n")[0]}); both sides start again`);
    }
  }
}

/**
 * Both sides, each started once (until its inspector is on its consumer) and running side by
 * side, idle while the other is driven: each phase's passes alternate between them
 * (measure.mjs `alternate`), `rounds` times. Returns each phase's medians per side and the
 * project's throughput as a ratio to the hand-written pair's (measure.mjs `pairedRatio`).
 */
async function blackBoxRun({ jobs, rounds, log }) {
  const started = {};
  try {
    for (const side of SIDES_ORDER) {
      log(`black box: starting ${side} (${SIDES[side].script})`);
      started[side] = await startInspectingConsumer(side, log);
    }
    const drivers = Object.fromEntries(SIDES_ORDER.map((side) => [side, driver(started[side].server.url, jobs)]));
    const cold = {};
    for (const side of SIDES_ORDER) cold[side] = await drivers[side].warmUp();
    const phases = await alternate(drivers, PHASES, rounds, (line) => log(`black box, ${line}, ${jobs} jobs`));
    // Each phase's figures, and the end-to-end warm-up's latency as the cold start.
    const summary = (side) => ({ ...phases[side], e2e_noop: { ...phases[side].e2e_noop, cold_start_ms: cold[side] } });
    const project = summary("project");
    const handwritten = summary("handwritten");
    const byPhase = (f) => Object.fromEntries(PHASES.map((phase) => [phase, f(project[phase], handwritten[phase])]));
    return {
      jobs: project.e2e_noop.jobs,
      rounds,
      stats_poll_ms: POLL_MS,
      inspected: "consumer",
      // How many starts each side took before its inspector was on its consumer.
      starts: Object.fromEntries(SIDES_ORDER.map((side) => [side, started[side].starts])),
      project,
      handwritten,
      ratio: byPhase(pairedRatio),
      // The untimed first passes': the first jobs after a start, V8 still optimizing.
      first_pass_ratio: byPhase((a, b) => round(a.first_pass_jobs_per_second / b.first_pass_jobs_per_second, 3)),
    };
  } catch (e) {
    for (const [side, { server }] of Object.entries(started)) log(`black box: ${side}'s last log lines:\n${server.tail()}`);
    throw e;
  } finally {
    for (const { server } of Object.values(started)) await server.stop();
  }
}
