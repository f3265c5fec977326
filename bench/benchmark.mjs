// Measures the platform on local workerd (the real built WASM, real local D1 and queues) against
// a floor measured in the same run: the same Rust toolchain and worker crate, the same messages
// and consumer settings, and no D1 at all (bench/floor). Every figure is the median of the
// repeats; throughputs are also given as a ratio to the floor, which is what survives a noisy
// machine. D1 work is counted from D1's own result meta (the producer's Server-Timing header and
// the consumer's per-batch log line), never estimated. Every timed pass follows a warm-up
// request (its latency is the cold start) and the same pass once untimed, and what is compared
// runs side by side, its passes alternating (measure.mjs `alternate`), for the platform and the
// floors alike. The D1 floor (the floor plus the round trips the contract allows, each an empty
// statement) shows how much of the gap to the floor is D1 itself where the benchmark runs; the
// http floor (the floor making the http jobs' fetches, as many at once as the consumer) does the
// same for `http`; the hand-written pair (bench/handwritten), run in-process the same way, shows
// what a minimal design that keeps its jobs in D1 reaches of the D1 floor. Each end-to-end run
// also counts what Cloudflare would bill for it (cost.mjs), and the black-box run
// (black_box.mjs) sets the project, started as a user starts it, beside the hand-written pair.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { spawnSync } from "node:child_process";
import { stripVTControlCharacters } from "node:util";
import { Log, LogLevel, Miniflare } from "miniflare";
import { unstable_splitSqlQuery } from "wrangler";
import { d1Stats, logCollector, startPlatform, waitFor, workerFromConfig, ROOT, TOKENS } from "../tests/support/platform.mjs";
import { startAppServer } from "../tests/support/app_server.mjs";
import { runBlackBox } from "./black_box.mjs";
import { scalePoint } from "./scale.mjs";
import { priced, usagePerJob } from "./cost.mjs";
import { workflowCosts } from "./workflow.mjs";
import { PRICES_CHECKED } from "./prices.mjs";
import { WARM_UP_JOBS, accepted, alternate, dbBytes, endToEndPass, enqueuePhase, jobsBody, median, medianOf, pairedRatio, pool, round, warmUp } from "./measure.mjs";

const CONCURRENCY = 8;
const KB = 1024;
const NOOP = { type: "noop", payload: {} };
/** Priced jobs besides noop and http: one that fails once (retried after 1 s), one delayed 1 s. */
const RETRIED = { type: "noop", payload: { fail_times: 1 }, retry: { policy: "fixed", table: [1] } };
const DELAYED = { type: "noop", payload: {}, delay_seconds: 1 };
/** Priced too: a noop under flow control with a limit it never reaches (its cost, not a wait),
 * concurrency's (an ask and a release per key per batch) being the dearer kind. */
const FLOWED = { type: "noop", payload: {}, flow_key: "bench", flow_limits: { concurrency: 1000 } };
/** The rows a consumer batch writes once, not per job (its `job_minutes` upsert, its
 * `success_batches` row and its `invocations` row): left out of the rows target, and shown
 * beside it. */
const ROWS_PER_BATCH = 3;
const rowsPerJobLessBatch = (run) => round(run.d1_rows_written_per_job - (ROWS_PER_BATCH * run.consumer_batches) / run.jobs);

/** The benchmark's targets (docs/performance.md "Benchmark"); each row says whether it is met. */
const TARGETS = [
  ["enqueue: D1 round trips per request (1 job)", (r) => r.enqueue_single.d1_round_trips_per_request, (v) => v === 1, "= 1"],
  ["enqueue: D1 round trips per request (100 jobs)", (r) => r.enqueue_batch.d1_round_trips_per_request, (v) => v === 1, "= 1"],
  ["consumer: D1 round trips per message batch (max)", (r) => r.e2e_noop.d1_round_trips_per_batch_max, (v) => v <= 2, "<= 2"],
  ["D1 rows written per succeeded job, indexes included, less the batch's 3 rows", (r) => rowsPerJobLessBatch(r.e2e_noop), (v) => v <= 4, "<= 4"],
  ["end-to-end noop throughput vs the D1 floor", (r) => r.e2e_noop.ratio_to_d1_floor, (v) => v >= 0.7, ">= 0.70"],
  ["end-to-end http throughput vs the http floor", (r) => r.e2e_http.ratio_to_http_floor, (v) => v >= 0.5, ">= 0.50"],
  ["black box: end to end vs the hand-written pair", (r) => r.black_box.ratio.e2e_noop, (v) => v >= 1, ">= 1.00"],
  ["black box: enqueue of 100 jobs/request vs the hand-written pair", (r) => r.black_box.ratio.enqueue_batch, (v) => v >= 1, ">= 1.00"],
  ["black box: enqueue of 1 job/request vs the hand-written pair", (r) => r.black_box.ratio.enqueue_single, (v) => v >= 1, ">= 1.00"],
  ["as the table grows: rows read per job, largest over smallest", (r) => spreadOf(r.scale, (s) => s.enqueue_rows_read_per_job + s.consumer_rows_read_per_job), (v) => v <= 1.1, "<= 1.10"],
  ["as the table grows: the slowest admin read at the largest", (r) => Math.max(...Object.values(r.scale.at(-1).admin_ms)), (v) => v <= 1000, "<= 1000 ms"],
  ["producer WASM gzip", (r) => r.wasm.producer.gzip_bytes, (v) => v <= 480 * KB, "<= 480 KB"],
  ["consumer WASM gzip", (r) => r.wasm.consumer.gzip_bytes, (v) => v <= 370 * KB, "<= 370 KB"],
];

/** How far a figure of the scale points spreads: the largest over the smallest. */
const spreadOf = (points, pick) => round(Math.max(...points.map(pick)) / Math.min(...points.map(pick)), 3);

function wasmSize(path) {
  const bytes = readFileSync(path);
  return { raw_bytes: bytes.length, gzip_bytes: gzipSync(bytes, { level: 9 }).length };
}

const ENQUEUE_HEADERS = { "content-type": "application/json", authorization: `Bearer ${TOKENS.enqueue}` };
/** An enqueue pass: up to 1,000 requests of 1 job, or `N` jobs 100 per request. */
const SINGLE = (N) => ({ requests: Math.min(N, 1000), perRequest: 1, concurrency: CONCURRENCY });
const BATCH = (N) => ({ requests: Math.ceil(N / 100), perRequest: 100, concurrency: CONCURRENCY });

/** The platform with no consumer: its enqueue passes, 1 job per request and 100. */
async function platformEnqueue(N) {
  const p = await startPlatform({ manualDelivery: true, onLog: () => {} });
  const post = (path, body) => p.mf.dispatchFetch(`http://jobs.local${path}`, { method: "POST", headers: ENQUEUE_HEADERS, body });
  return {
    single: () => enqueuePhase(() => post("/v1/jobs", JSON.stringify(NOOP)), SINGLE(N)),
    batch: () => enqueuePhase((n) => post("/v1/jobs/batch", jobsBody(NOOP, n)), BATCH(N)),
    dispose: () => p.dispose(),
  };
}

/** The platform end to end with `job` (`jobs` per pass), each pass counting what it costs. */
async function platformEndToEnd(job, jobs) {
  const logs = logCollector();
  const p = await startPlatform({ onLog: logs.onLog });
  const post = (body) => p.mf.dispatchFetch("http://jobs.local/v1/jobs/batch", { method: "POST", headers: ENQUEUE_HEADERS, body });
  // Polled through the admin API (Miniflare's D1 proxy is not made for polling under load),
  // seldom: the end time is the consumer's own log timestamp of its last batch.
  const succeeded = async () => (await p.request("GET", "/v1/admin/stats", { token: TOKENS.admin })).body.families.default.counts.succeeded;
  const coldStartMs = await warmUp(() => post(jobsBody(job, WARM_UP_JOBS)), succeeded);
  const requests = Math.ceil(jobs / 100);
  const total = requests * 100;
  const e2e = async () => {
    logs.clear();
    const before = await succeeded();
    const bytesBefore = await dbBytes(p.db);
    const enqueueStats = [];
    const started = Date.now();
    await pool(requests, CONCURRENCY, async () => {
      const res = await post(jobsBody(job, 100));
      enqueueStats.push(d1Stats(res.headers));
      await accepted(res);
    });
    await waitFor(async () => (await succeeded()) >= before + total, { what: `${total} ${job.type} jobs`, everyMs: 1000, timeoutMs: 60_000 + total * 100 });
    const seconds = (Math.max(...logs.events("batch.completed").map((b) => b.logged_at)) - started) / 1000;
    const storedBytes = (await dbBytes(p.db)) - bytesBefore;
    const jobBatches = logs.events("batch.completed").filter((b) => !b.queue.endsWith("-dlq"));
    const messages = jobBatches.reduce((a, b) => a + b.messages, 0);
    const rowsWritten = enqueueStats.reduce((a, s) => a + s.own_rows_written, 0) + jobBatches.reduce((a, b) => a + b["d1.rows_written"], 0);
    const rowsRead = enqueueStats.reduce((a, s) => a + s.own_rows_read, 0) + jobBatches.reduce((a, b) => a + b["d1.rows_read"], 0);
    return {
      jobs: total,
      seconds: round(seconds),
      jobs_per_second: round(total / seconds, 1),
      consumer_batches: jobBatches.length,
      messages_per_batch: round(messages / jobBatches.length, 1),
      d1_round_trips_per_batch_max: Math.max(...jobBatches.map((b) => b["d1.round_trips"])),
      d1_rows_written_per_job: round(rowsWritten / total),
      d1_rows_read_per_job: round(rowsRead / total),
      consumer_ms_per_batch: round(median(jobBatches.map((b) => b.duration_ms))),
      consumer_ms_per_message: round(jobBatches.reduce((a, b) => a + b.duration_ms, 0) / messages, 3),
      ...usagePerJob({ jobs: total, requests, batches: jobBatches, logLines: logs.count(), storedBytes }),
    };
  };
  return { e2e, coldStartMs, dispose: () => p.dispose() };
}

/** The project's default-family consumer settings (batch size, concurrency...) for `jobs-default`. */
const defaultFamilyConsumer = () => ({
  "jobs-default": workerFromConfig(join(ROOT, "consumer", "wrangler.toml")).queueConsumers["jobs-default"],
});

/**
 * A side whose jobs `acked()` counts, end to end: one warm-up request of `send()` (its 100 jobs
 * are `WARM_UP_JOBS`; its latency is the cold start), then passes of `N` jobs, 100 per request,
 * polled every 10 ms.
 */
async function endToEndSide(mf, send, acked, N) {
  const coldStartMs = await warmUp(send, acked);
  const e2e = () => endToEndPass(send, acked, { requests: Math.ceil(N / 100), concurrency: CONCURRENCY, everyMs: 10 });
  return { e2e, coldStartMs, dispose: () => mf.dispose() };
}

/**
 * The floor: the same messages through the same queue settings, no D1. With `d1`, the D1
 * floor: the same plus the round trips the platform's contract allows, each an empty statement;
 * with `httpUrl`, the http floor: one POST to it per message, as many at once as the consumer.
 * With `consumer`, its queue is consumed.
 */
function floorWorkers({ d1 = false, httpUrl, consumer = false }) {
  const consumerOptions = workerFromConfig(join(ROOT, "consumer", "wrangler.toml"));
  const producerOptions = workerFromConfig(join(ROOT, "wrangler.toml"));
  const floor = (name, extra) => ({
    name,
    modules: true,
    scriptPath: join(ROOT, "bench", "floor", "build", "index.js"),
    compatibilityDate: consumerOptions.compatibilityDate,
    modulesRules: consumerOptions.modulesRules,
    ...(d1 && { d1Databases: { DB: "floor" } }),
    ...extra,
  });
  const mf = new Miniflare({
    handleStructuredLogs: () => {},
    workers: [
      floor("floor-producer", { queueProducers: producerOptions.queueProducers }),
      floor("floor-consumer", {
        ...(consumer && { queueConsumers: defaultFamilyConsumer() }),
        ...(httpUrl && { bindings: { HTTP_URL: httpUrl } }),
      }),
    ],
  });
  const post = (count) => mf.dispatchFetch("http://floor.local/v1/jobs/batch", { method: "POST", body: jobsBody(NOOP, count) });
  return { mf, post };
}

/** The floor with no consumer: its enqueue passes (the D1 floor's: 1 job per request only). */
function floorEnqueue(N, { d1 = false } = {}) {
  const { mf, post } = floorWorkers({ d1 });
  return {
    single: () => enqueuePhase(() => post(1), SINGLE(N)),
    ...(!d1 && { batch: () => enqueuePhase((n) => post(n), BATCH(N)) }),
    dispose: () => mf.dispose(),
  };
}

/** The floor end to end (see floorWorkers), `N` jobs per pass. */
async function floorEndToEnd(N, options = {}) {
  const { mf, post } = floorWorkers({ ...options, consumer: true });
  const consumer = await mf.getWorker("floor-consumer");
  const acked = async () => Number(await (await consumer.fetch("http://floor.local/acked")).text());
  return endToEndSide(mf, () => post(100), acked, N);
}

/**
 * A Miniflare log that counts the messages the queue broker reports acked, from the line it
 * logs after each batch ("QUEUE jobs-default 100/100 (3ms)"): how the hand-written pair's
 * progress is read without a request to its Workers (its stats would scan its table).
 */
class AckedLog extends Log {
  acked = 0;
  constructor() {
    super(LogLevel.INFO);
  }
  logWithLevel(level, message) {
    const batch = /^QUEUE jobs-default (\d+)\//.exec(stripVTControlCharacters(message));
    if (batch) this.acked += Number(batch[1]);
  }
}

/**
 * The hand-written pair (bench/handwritten) in-process on its own local D1 and queue: its
 * producer, and with `consumer` its consumer on the project's default queue settings, as the
 * floors are. Its single-job enqueue and its end to end are yardsticks for the platform's beside
 * the D1 floor's: what a minimal design that keeps its jobs in D1 costs here (docs/performance.md
 * "Benchmark").
 */
async function handwrittenWorkers({ consumer = false } = {}) {
  const log = new AckedLog();
  const pair = (name, script, extra) => ({
    name,
    modules: true,
    scriptPath: join(ROOT, "bench", "handwritten", script),
    compatibilityDate: workerFromConfig(join(ROOT, "wrangler.toml")).compatibilityDate,
    d1Databases: { DB: "handwritten" },
    ...extra,
  });
  const mf = new Miniflare({
    log,
    handleStructuredLogs: () => {},
    workers: [
      pair("handwritten-producer", "producer.js", { queueProducers: { QUEUE: { queueName: "jobs-default" } } }),
      ...(consumer ? [pair("handwritten-consumer", "consumer.js", { queueConsumers: defaultFamilyConsumer() })] : []),
    ],
  });
  const db = await mf.getD1Database("DB", "handwritten-producer");
  const migration = readFileSync(join(ROOT, "bench", "handwritten", "migrations", "0001_jobs.sql"), "utf8");
  await db.batch(unstable_splitSqlQuery(migration).map((statement) => db.prepare(statement)));
  const post = (path, body) => mf.dispatchFetch(`http://handwritten.local${path}`, { method: "POST", body });
  return { mf, post, acked: async () => log.acked };
}

/** The hand-written producer alone: its single-job enqueue passes. */
async function handwrittenEnqueue(N) {
  const { mf, post } = await handwrittenWorkers();
  return { single: () => enqueuePhase(() => post("/v1/jobs", JSON.stringify(NOOP)), SINGLE(N)), dispose: () => mf.dispose() };
}

/** The hand-written pair end to end, `N` jobs per pass, timed as the floors are. */
async function handwrittenEndToEnd(N) {
  const { mf, post, acked } = await handwrittenWorkers({ consumer: true });
  return endToEndSide(mf, () => post("/v1/jobs/batch", jobsBody(NOOP, 100)), acked, N);
}

/**
 * `starters` (name -> what starts a side) started in order, run side by side, each phase's
 * passes alternating between them (measure.mjs `alternate`), then stopped, even when one fails
 * to start (its runtimes would keep the process alive); a side that was warmed up has its
 * warm-up latency as each phase's cold start.
 */
async function sideBySide(starters, phases, rounds, log) {
  const sides = {};
  try {
    for (const [name, start] of Object.entries(starters)) sides[name] = await start();
    const measured = await alternate(sides, phases, rounds, log);
    for (const [name, side] of Object.entries(sides)) {
      if (side.coldStartMs === undefined) continue;
      for (const phase of phases) measured[name][phase].cold_start_ms = side.coldStartMs;
    }
    return measured;
  } finally {
    await Promise.all(Object.values(sides).map((side) => side.dispose()));
  }
}

/**
 * Runs the whole benchmark `repeats` times with `jobs` jobs per end-to-end run (what is
 * compared alternating `rounds` times in each), then the black box (`rounds` rounds of
 * `blackBoxJobs` jobs), and returns the medians, the floors, the ratios, the cost per million
 * jobs and each target's verdict.
 */
export async function runBenchmark({
  jobs: N = 10_000,
  repeats: REPEATS = 3,
  blackBoxJobs = N,
  rounds = 5,
  scale = [1_000, 100_000, 1_000_000],
  scaleJobs = 2_000,
  workflow = { chains: 100, steps: 5, branches: 1_000 },
  build = true,
  log = console.error,
} = {}) {
  if (build) {
    const build = spawnSync("node", [join(ROOT, "scripts", "build.mjs"), "producer", "consumer", "bench/floor"], { stdio: "inherit" });
    if (build.status !== 0) process.exit(build.status ?? 1);
  }
  const app = await startAppServer();
  const HTTP = { type: "http", payload: { url: app.url("/noop"), method: "POST" } };
  const pricedJobs = Math.min(N, 1000);
  const runs = [];
  let workflowCost;
  try {
    for (let i = 0; i < REPEATS; i++) {
      log(`run ${i + 1}/${REPEATS}: ${N} jobs`);
      const inRun = (line) => log(`run ${i + 1}/${REPEATS}, ${line}`);
      const enqueue = await sideBySide(
        {
          floor: () => floorEnqueue(N),
          floorD1: () => floorEnqueue(N, { d1: true }),
          handwritten: () => handwrittenEnqueue(N),
          platform: () => platformEnqueue(N),
        },
        ["single", "batch"],
        rounds,
        inRun,
      );
      const noop = await sideBySide(
        {
          floor: () => floorEndToEnd(N),
          floorD1: () => floorEndToEnd(N, { d1: true }),
          handwritten: () => handwrittenEndToEnd(N),
          platform: () => platformEndToEnd(NOOP, N),
        },
        ["e2e"],
        rounds,
        inRun,
      );
      const http = await sideBySide(
        { floor: () => floorEndToEnd(N, { httpUrl: app.url("/noop") }), platform: () => platformEndToEnd(HTTP, N) },
        ["e2e"],
        rounds,
        inRun,
      );
      // Priced, not compared: one pass each after an untimed one.
      const retried = await sideBySide({ platform: () => platformEndToEnd(RETRIED, pricedJobs) }, ["e2e"], 1, inRun);
      const delayed = await sideBySide({ platform: () => platformEndToEnd(DELAYED, pricedJobs) }, ["e2e"], 1, inRun);
      const flowed = await sideBySide({ platform: () => platformEndToEnd(FLOWED, pricedJobs) }, ["e2e"], 1, inRun);
      runs.push({
        floor: { single: enqueue.floor.single, batch: enqueue.floor.batch, e2e: noop.floor.e2e },
        floorD1: { single: enqueue.floorD1.single, e2e: noop.floorD1.e2e },
        floorHttp: { e2e: http.floor.e2e },
        handwrittenSingle: enqueue.handwritten.single,
        handwrittenE2e: noop.handwritten.e2e,
        platform: {
          single: enqueue.platform.single,
          batch: enqueue.platform.batch,
          noop: noop.platform.e2e,
          http: http.platform.e2e,
          retried: retried.platform.e2e,
          delayed: delayed.platform.e2e,
          flowed: flowed.platform.e2e,
        },
      });
    }
    log(`workflow: ${workflow.chains} chains of ${workflow.steps} steps, and a join of ${workflow.branches} branches`);
    workflowCost = await workflowCosts({ app, ...workflow });
  } finally {
    await app.close();
  }
  const blackBox = await runBlackBox({ jobs: blackBoxJobs, rounds, log });
  const scalePoints = [];
  for (const preexisting of scale) {
    log(`scale: ${scaleJobs} jobs with ${preexisting} already in D1`);
    scalePoints.push(await scalePoint(preexisting, scaleJobs));
  }

  const floor = {
    single: medianOf(runs, (r) => r.floor.single),
    batch: medianOf(runs, (r) => r.floor.batch),
    single_with_d1_round_trip: medianOf(runs, (r) => r.floorD1.single),
    e2e: medianOf(runs, (r) => r.floor.e2e),
    e2e_with_d1_round_trips: medianOf(runs, (r) => r.floorD1.e2e),
    e2e_http: medianOf(runs, (r) => r.floorHttp.e2e),
  };
  // Across runs not side by side: the ratio of their medians.
  const ratio = (pick, floorValue) => round(median(runs.map((r) => pick(r))) / floorValue, 3);
  const enqueueSingle = medianOf(runs, (r) => r.platform.single);
  const handwrittenSingle = medianOf(runs, (r) => r.handwrittenSingle);
  const handwrittenE2e = medianOf(runs, (r) => r.handwrittenE2e);
  const enqueueBatch = medianOf(runs, (r) => r.platform.batch);
  const e2eNoop = medianOf(runs, (r) => r.platform.noop);
  const e2eHttp = medianOf(runs, (r) => r.platform.http);
  const result = {
    date: new Date().toISOString(),
    machine: { cpus: (await import("node:os")).cpus().length, node: process.version },
    jobs: N,
    repeats: REPEATS,
    enqueue_single: {
      ...enqueueSingle,
      ratio_to_floor: pairedRatio(enqueueSingle, floor.single),
      ratio_to_d1_floor: pairedRatio(enqueueSingle, floor.single_with_d1_round_trip),
    },
    // The hand-written producer's single-job enqueue, in-process: what the black box's
    // single-enqueue target is held to, measured without wrangler dev in front; and the D1
    // floor's against it: a Rust Worker's own cost per request.
    handwritten_producer_single: handwrittenSingle,
    d1_floor_single_vs_handwritten: pairedRatio(floor.single_with_d1_round_trip, handwrittenSingle),
    // The hand-written pair end to end, in-process: what a minimal durable design reaches of
    // the D1 floor where the benchmark runs, beside the platform's ratio to both.
    handwritten_pair_e2e: { ...handwrittenE2e, ratio_to_d1_floor: pairedRatio(handwrittenE2e, floor.e2e_with_d1_round_trips) },
    enqueue_batch: { ...enqueueBatch, ratio_to_floor: pairedRatio(enqueueBatch, floor.batch) },
    e2e_noop: {
      ...e2eNoop,
      ratio_to_floor: pairedRatio(e2eNoop, floor.e2e),
      ratio_to_d1_floor: pairedRatio(e2eNoop, floor.e2e_with_d1_round_trips),
      ratio_to_handwritten: pairedRatio(e2eNoop, handwrittenE2e),
    },
    e2e_http: {
      ...e2eHttp,
      ratio_to_floor: ratio((r) => r.platform.http.jobs_per_second, floor.e2e.jobs_per_second),
      ratio_to_http_floor: pairedRatio(e2eHttp, floor.e2e_http),
    },
    floor,
    black_box: blackBox,
    scale: scalePoints,
    cost: {
      prices_checked: PRICES_CHECKED,
      noop: priced(e2eNoop),
      http: priced(e2eHttp),
      retried_once: priced(medianOf(runs, (r) => r.platform.retried)),
      delayed: priced(medianOf(runs, (r) => r.platform.delayed)),
      flow_controlled: priced(medianOf(runs, (r) => r.platform.flowed)),
      workflow_step: workflowCost.per_step,
    },
    workflow_join: workflowCost.join,
    wasm: {
      producer: wasmSize(join(ROOT, "producer", "build", "index_bg.wasm")),
      consumer: wasmSize(join(ROOT, "consumer", "build", "index_bg.wasm")),
      floor: wasmSize(join(ROOT, "bench", "floor", "build", "index_bg.wasm")),
    },
  };
  result.targets = TARGETS.map(([name, pick, ok, target]) => ({ name, value: pick(result), target, met: ok(pick(result)) }));
  return result;
}

/** Rows of cells as aligned text columns. */
function columns(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => String(row[i]).length)));
  return rows.map((row) => row.map((c, i) => String(c).padEnd(widths[i])).join("  ").trimEnd());
}

/** The result as tables, for a terminal. */
export function formatTable(r) {
  const kb = (b) => `${round(b / KB, 1)} KB`;
  const bb = r.black_box;
  const spread = (xs) => (xs.length > 1 ? ` (${Math.min(...xs)}-${Math.max(...xs)})` : "");
  const side = ({ jobs_per_second, rounds_jobs_per_second }) => `${jobs_per_second} jobs/s${spread(rounds_jobs_per_second)}`;
  const blackBoxRow = (name, phase) => [name, side(bb.project[phase]), side(bb.handwritten[phase]), `${bb.ratio[phase]}x`, `${bb.first_pass_ratio[phase]}x`];
  const usd = (x) => `$${x < 10 ? round(x, 3) : round(x, 2)}`;
  const costRow = (name, c) => [
    name,
    c.requests_per_job,
    c.d1_rows_written_per_job,
    c.d1_rows_read_per_job,
    c.queue_operations_per_job,
    c.log_events_per_job,
    c.analytics_points_per_job,
    c.do_requests_per_job,
    usd(c.usd_per_million_jobs.total),
    `${Math.round(c.stored_bytes_per_job)} B (${usd(c.usd_per_million_jobs.d1_storage_per_month_kept)}/month)`,
  ];
  return [
    `${r.jobs} jobs, median of ${r.repeats} run(s)`,
    "",
    ...columns([
      ["enqueue, 1 job/request", `${r.enqueue_single.jobs_per_second} jobs/s`, `p50 ${r.enqueue_single.latency_ms_p50} ms, p99 ${r.enqueue_single.latency_ms_p99} ms`, `${r.enqueue_single.ratio_to_floor}x floor (${r.floor.single.jobs_per_second}/s)`],
      ["  D1 floor / hand-written", `${r.floor.single_with_d1_round_trip.jobs_per_second} / ${r.handwritten_producer_single.jobs_per_second} jobs/s`, "1 job/request: the floor + its round trip / bench/handwritten's producer", `${r.enqueue_single.ratio_to_d1_floor}x the D1 floor; the D1 floor ${r.d1_floor_single_vs_handwritten}x the hand-written`],
      ["enqueue, 100 jobs/request", `${r.enqueue_batch.jobs_per_second} jobs/s`, `p50 ${r.enqueue_batch.latency_ms_p50} ms, p99 ${r.enqueue_batch.latency_ms_p99} ms`, `${r.enqueue_batch.ratio_to_floor}x floor (${r.floor.batch.jobs_per_second}/s)`],
      ["end to end, noop", `${r.e2e_noop.jobs_per_second} jobs/s`, `${r.e2e_noop.jobs} jobs in ${r.e2e_noop.seconds} s`, `${r.e2e_noop.ratio_to_floor}x floor (${r.floor.e2e.jobs_per_second}/s)`],
      ["end to end, http", `${r.e2e_http.jobs_per_second} jobs/s`, `${r.e2e_http.jobs} jobs in ${r.e2e_http.seconds} s`, `${r.e2e_http.ratio_to_floor}x floor`],
      ["  D1 floor", `${r.floor.e2e_with_d1_round_trips.jobs_per_second} jobs/s`, "the floor + D1's round trips, empty", `noop: ${r.e2e_noop.ratio_to_d1_floor}x the D1 floor`],
      ["  hand-written pair", `${r.handwritten_pair_e2e.jobs_per_second} jobs/s`, "bench/handwritten in-process: a job row and a run row, no index", `noop: ${r.e2e_noop.ratio_to_handwritten}x the pair; the pair ${r.handwritten_pair_e2e.ratio_to_d1_floor}x the D1 floor`],
      ["  http floor", `${r.floor.e2e_http.jobs_per_second} jobs/s`, "the floor + the same fetches, same cap", `http: ${r.e2e_http.ratio_to_http_floor}x the http floor`],
      ["first request (cold)", `${r.e2e_noop.cold_start_ms} ms`, `floor: ${r.floor.e2e.cold_start_ms} ms`, "before the timed runs"],
      ["end to end, noop, untimed first pass", `${r.e2e_noop.first_pass_jobs_per_second} jobs/s`, `D1 floor's: ${r.floor.e2e_with_d1_round_trips.first_pass_jobs_per_second} jobs/s`, "V8 still optimizing"],
      ["D1 per enqueue request", `${r.enqueue_single.d1_round_trips_per_request} / ${r.enqueue_batch.d1_round_trips_per_request} round trip(s)`, "1 job / 100 jobs", ""],
      ["D1 per consumer batch", `<= ${r.e2e_noop.d1_round_trips_per_batch_max} round trips`, `${r.e2e_noop.messages_per_batch} messages/batch`, ""],
      ["D1 rows per succeeded job", `${r.e2e_noop.d1_rows_written_per_job} written`, `${r.e2e_noop.d1_rows_read_per_job} read (noop)`, `enqueue alone writes ${r.enqueue_batch.d1_rows_written_per_job}`],
      ["consumer time", `${r.e2e_noop.consumer_ms_per_batch} ms/batch`, `${r.e2e_noop.consumer_ms_per_message} ms/message (noop)`, `http: ${r.e2e_http.consumer_ms_per_batch} ms/batch`],
      ["WASM producer", kb(r.wasm.producer.raw_bytes), `${kb(r.wasm.producer.gzip_bytes)} gzip`, ""],
      ["WASM consumer", kb(r.wasm.consumer.raw_bytes), `${kb(r.wasm.consumer.gzip_bytes)} gzip`, ""],
      ["WASM floor", kb(r.wasm.floor.raw_bytes), `${kb(r.wasm.floor.gzip_bytes)} gzip`, ""],
    ]),
    "",
    `black box: \`npm run dev\` over HTTP beside the hand-written pair (bench/handwritten), ${bb.jobs} jobs, median of ${bb.rounds} round(s) (their range)`,
    ...columns([
      ["", "project", "hand-written", "ratio", "untimed first passes' ratio"],
      blackBoxRow("end to end, noop (100/request, 4 at a time)", "e2e_noop"),
      blackBoxRow("enqueue, 100 jobs/request (4 at a time)", "enqueue_batch"),
      blackBoxRow("enqueue, 1 job/request (16 at a time)", "enqueue_single"),
    ]).map((line) => `  ${line}`),
    "",
    `cost per million jobs: Workers Paid list prices checked ${r.cost.prices_checked} (bench/prices.mjs), marginal (included amounts not subtracted), CPU time not priced`,
    ...columns([
      ["per job:", "requests", "rows written", "rows read", "queue ops", "log events", "AE points", "DO requests", "$ per M jobs", "D1 stored (per M jobs kept a month)"],
      costRow("noop", r.cost.noop),
      costRow("http", r.cost.http),
      costRow("noop, failing once", r.cost.retried_once),
      costRow("noop, delayed 1 s", r.cost.delayed),
      costRow("noop, flow-controlled", r.cost.flow_controlled),
      costRow("a workflow's step (noop, taking the step before's result)", r.cost.workflow_step),
    ]).map((line) => `  ${line}`),
    "",
    `a workflow's join (bench/workflow.mjs): a list fanned out to ${r.workflow_join.branches} noop branches, joined into one step`,
    `  ${r.workflow_join.jobs} jobs in ${r.workflow_join.seconds} s: ${r.workflow_join.d1_round_trips} D1 round trips (at most ${r.workflow_join.d1_round_trips_max_per_batch} per consumer batch, ${r.workflow_join.consumer_batches} batches), ${r.workflow_join.d1_rows_written} rows written, ${r.workflow_join.d1_rows_read} read; ${usd(r.workflow_join.usd_per_workflow)} a workflow, ${usd(r.workflow_join.usd_per_million_branches)} per million branches`,
    "",
    `as the table grows: ${r.scale[0].jobs} noop jobs with jobs already in D1 (bench/scale.mjs); admin reads in ms`,
    ...columns([
      ["already in D1", "jobs/s", "rows read/job", "rows written/job (consumer)", "D1 SQL ms (enqueue / batch)", "bytes/job", "stats", "list", "list queued", "list dead", "history", "failures"],
      ...r.scale.map((s) => [
        s.preexisting,
        s.jobs_per_second,
        `${s.enqueue_rows_read_per_job} + ${s.consumer_rows_read_per_job}`,
        s.consumer_rows_written_per_job,
        `${s.enqueue_sql_ms_per_request} / ${s.consumer_sql_ms_per_batch}`,
        s.bytes_per_new_job,
        ...["stats", "list", "list_queued", "list_dead", "history", "failures"].map((k) => s.admin_ms[k]),
      ]),
    ]).map((line) => `  ${line}`),
    "",
    "targets",
    ...r.targets.map((t) => `  ${t.met ? "met   " : "MISSED"}  ${t.name}: ${t.value} (target ${t.target})`),
  ].join("\n");
}
