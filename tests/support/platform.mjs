// Runs the built producer and consumer WASM on local workerd through Miniflare, configured from
// the real wrangler.toml files (bindings, queues, consumer settings), with an in-memory D1 that
// the real migrations create. Only secrets and endpoint URLs are supplied by the test.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { after, before } from "node:test";
import { build } from "esbuild";
import { Miniflare } from "miniflare";
import { startAppServer } from "./app_server.mjs";
import { unstable_getMiniflareWorkerOptions, unstable_splitSqlQuery } from "wrangler";
import { localConsumerConfig, STANDIN_CONFIG } from "../../scripts/local-config.mjs";

export const ROOT = resolve(import.meta.dirname, "..", "..");
export const TOKENS = { enqueue: "test-enqueue-token", admin: "test-admin-token" };
/** The producer's token secrets, as every test producer gets them. */
export const PRODUCER_SECRETS = { ENQUEUE_TOKENS: TOKENS.enqueue, ADMIN_TOKENS: TOKENS.admin };
export const SIGNING_SECRET = "test-signing-secret";
/** The Worker that holds the producer's static files, behind its STATIC binding. */
const STATIC_CONFIG = join(ROOT, "producer", "static", "wrangler.toml");

export function workerFromConfig(configPath, { bindings = {}, withoutQueueConsumers = false } = {}) {
  const { workerOptions, main } = unstable_getMiniflareWorkerOptions(configPath);
  const config = readFileSync(configPath, "utf8");
  const name = /^name\s*=\s*"([^"]+)"/m.exec(config)[1];
  const options = {
    ...workerOptions,
    name,
    modules: true,
    // A Worker of static assets alone (producer/static/wrangler.toml) has no script of its own.
    ...(main ? { scriptPath: resolve(dirname(configPath), main) } : { script: "export default {};" }),
    bindings: { ...(workerOptions.bindings ?? {}), ...bindings },
  };
  if (withoutQueueConsumers) delete options.queueConsumers;
  return options;
}

/**
 * A Worker of the team's own (an example under examples/), bundled as `wrangler deploy` bundles
 * it (its imports, such as @cf-jobs/client, resolved from node_modules), as a Miniflare worker
 * named `name` with `bindings`.
 */
export async function bundledWorker(entry, { name, bindings = {} }) {
  const out = await build({ entryPoints: [entry], bundle: true, format: "esm", platform: "neutral", write: false });
  return { name, modules: true, script: out.outputFiles[0].text, compatibilityDate: "2026-04-01", bindings };
}

/**
 * Starts both workers. `consumerBindings` adds vars (ENDPOINT_*) to the consumer.
 * `manualDelivery` leaves the family queues without a consumer, so the test delivers each batch
 * itself through the consumer's `queue` handler and sees every ack and retry decision.
 * `onLog` receives every console line of both workers ({timestamp, level, message}).
 * `producerBindings` adds vars to the producer; `extraWorkers` are more Miniflare workers
 * (e.g. a producer variant) sharing the same D1 and queues. The consumer runs its local config
 * (scripts/local-config.mjs): BROWSER is the stand-in worker, configured by `standinBindings`
 * (e.g. CHROMIUM_URL of a Chromium the test started). The producer's STATIC binding is the
 * static files' Worker, as deployed. `migrateOver` ({before, seed}) writes the rows an older
 * schema held: `seed(db)` runs after the migrations named before `before`, and the rest after it.
 * `consumerServices` adds service bindings to the consumer ({APP: "<an extra worker's name>"}).
 */
export async function startPlatform({
  consumerBindings = {},
  consumerServices = {},
  producerBindings = {},
  manualDelivery = false,
  onLog,
  extraWorkers = [],
  standinBindings = {},
  migrateOver,
} = {}) {
  // Miniflare waits without a word for a script that is not there: say so instead.
  for (const crate of ["producer", "consumer"]) {
    if (!existsSync(join(ROOT, crate, "build", "index.js"))) throw new Error(`${crate} is not built: run node scripts/build.mjs (npm test builds it)`);
  }
  const producer = workerFromConfig(join(ROOT, "wrangler.toml"), {
    bindings: { ...PRODUCER_SECRETS, ...producerBindings },
  });
  const consumer = workerFromConfig(localConsumerConfig(), {
    bindings: { SIGNING_SECRET, ...consumerBindings },
    withoutQueueConsumers: manualDelivery,
  });
  consumer.serviceBindings = { ...consumer.serviceBindings, ...consumerServices };
  const standin = workerFromConfig(STANDIN_CONFIG, { bindings: standinBindings });
  const files = workerFromConfig(STATIC_CONFIG);
  const workers = [producer, consumer, standin, files, ...extraWorkers];
  const options = { workers, ...(onLog && { handleStructuredLogs: onLog }) };
  for (let tries = 1; ; tries++) {
    const mf = new Miniflare(options);
    try {
      await mf.ready;
      const db = await mf.getD1Database("DB", producer.name);
      await migrate(db, migrateOver);
      return new Platform(mf, db, producer.name, consumer.name, options);
    } catch (e) {
      // A Miniflare left running would keep the test file's process alive until CI times out.
      await mf.dispose().catch(() => {});
      // Miniflare's synchronous proxy (db.prepare) can pair a reply with the wrong call, and
      // every call after it then fails: a fault of the harness, not of the platform. A fresh
      // instance starts clean; it is retried once, saying so.
      if (tries > 1 || !String(e?.stack).includes("SynchronousFetcher")) throw e;
      console.error(`startPlatform: Miniflare's synchronous proxy failed (${e.message}); starting a fresh instance`);
    }
  }
}

/** Applies every migration, in name order as wrangler does; `migrateOver.seed` runs first at its own. */
async function migrate(db, migrateOver) {
  let seeded = !migrateOver;
  for (const file of readdirSync(join(ROOT, "migrations")).filter((f) => f.endsWith(".sql")).sort()) {
    if (!seeded && file >= migrateOver.before) {
      await migrateOver.seed(db);
      seeded = true;
    }
    const sql = readFileSync(join(ROOT, "migrations", file), "utf8");
    await db.batch(unstable_splitSqlQuery(sql).map((statement) => db.prepare(statement)));
  }
}

/**
 * Collects every worker log line that is a JSON object, parsed, with Miniflare's timestamp as
 * `logged_at`; pass `onLog` to startPlatform. `of` and `events` pick one job's or one event's
 * lines; `count` is how many lines were logged, JSON or not (Workers Logs bills each one);
 * `clear` forgets them all (a warm-up's).
 */
export function logCollector() {
  const lines = [];
  let count = 0;
  const onLog = ({ message, timestamp }) => {
    count++;
    const at = message.indexOf("{");
    if (at < 0) return;
    try {
      lines.push({ ...JSON.parse(message.slice(at)), logged_at: timestamp });
    } catch {
      // not a JSON line
    }
  };
  return {
    lines,
    onLog,
    count: () => count,
    clear: () => {
      lines.length = 0;
      count = 0;
    },
    of: (id) => lines.filter((l) => l["job.id"] === id),
    events: (name) => lines.filter((l) => l.event === name),
  };
}

/**
 * A real D1 fault: a trigger `name` that refuses each write `on` (`UPDATE OF status ON jobs`)
 * of a row `when` holds (SQL over OLD and NEW), failing the statement and its batch. Returns
 * the undo (drops the trigger).
 */
export async function refuseWrites(p, name, on, when) {
  await p.db.prepare(`CREATE TRIGGER ${name} BEFORE ${on} WHEN ${when} BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`).run();
  return () => p.db.prepare(`DROP TRIGGER ${name}`).run();
}

/** Refuses job `id`'s move to `succeeded` (see refuseWrites), so its success cannot be recorded. */
export function refuseSuccess(p, id) {
  return refuseWrites(p, "refuse_success", "UPDATE OF status ON jobs", `NEW.id = '${id}' AND NEW.status = 'succeeded'`);
}

/**
 * Parses `Server-Timing: d1;desc="round_trips=1 rows_read=2 rows_written=3 sql_ms=0.1"`, and
 * from an enqueue's `write;desc="requests=3 jobs=5 own_jobs=1"` (the write its request shared,
 * docs/app-guide.md "Enqueue, grouped") `write`; `own_rows_read` and `own_rows_written` are the
 * request's part of the rows, in proportion to its own jobs in the write (all of them without one).
 */
export function d1Stats(headers) {
  const entry = (name) => {
    const desc = new RegExp(`${name};desc="([^"]*)"`).exec(headers.get("server-timing") ?? "")?.[1] ?? "";
    return Object.fromEntries(desc.split(" ").filter(Boolean).map((kv) => kv.split("=")).map(([k, v]) => [k, Number(v)]));
  };
  const d1 = entry("d1");
  const write = entry("write");
  const share = write.jobs ? write.own_jobs / write.jobs : 1;
  return {
    ...d1,
    own_rows_read: d1.rows_read * share,
    own_rows_written: d1.rows_written * share,
    ...(write.jobs && { write }),
  };
}

/** Polls every `everyMs` until `probe` returns a truthy value (returned), or fails after `timeoutMs`. */
export async function waitFor(probe, { timeoutMs = 20_000, everyMs = 100, what = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Enqueues `n` jobs like `job` in one request; returns their ids. */
export async function enqueueBatch(p, job, n) {
  const res = await p.request("POST", "/v1/jobs/batch", { json: { jobs: Array.from({ length: n }, () => job) } });
  if (res.status !== 202) throw new Error(`enqueue: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.jobs.map((j) => j.id);
}

/** Enqueues `n` jobs like `job` in one request and delivers them to `queue` in one batch; returns their ids. */
export async function enqueueAndDeliver(p, queue, job, n = 1) {
  const ids = await enqueueBatch(p, job, n);
  await p.deliver(queue, ids.map((id) => jobMessage(id, job.type)));
  return ids;
}

/**
 * The message the producer queues for a job, for `Platform.deliver`; `body` adds fields to its
 * body (e.g. `cid`). Spread it to set the message's own id or attempts.
 */
export const jobMessage = (id, type, body = {}) => ({ body: { v: 1, id, type, ...body } });

class Platform {
  constructor(mf, db, producerName, consumerName, options) {
    this.mf = mf;
    this.db = db;
    this.producerName = producerName;
    this.consumerName = consumerName;
    this.options = options;
  }

  /**
   * Restarts the runtime, as a crash of every Worker and Durable Object would: whatever ran is
   * cut off and every object's memory is gone; D1's and the objects' storage stay.
   */
  async restart() {
    await this.mf.setOptions(this.options);
    this.db = await this.mf.getD1Database("DB", this.producerName);
  }

  /**
   * An HTTP request to the producer (or to the worker named `worker`); `json` is sent as the
   * body, `token` as the bearer.
   */
  async request(method, path, { json, body, token = TOKENS.enqueue, headers = {}, worker } = {}) {
    const h = { ...headers };
    if (token) h.authorization = `Bearer ${token}`;
    if (json !== undefined) h["content-type"] ??= "application/json";
    const target = worker ? await this.mf.getWorker(worker) : this.mf;
    const res = await (worker ? target.fetch : target.dispatchFetch).call(target, `http://jobs.local${path}`, {
      method,
      headers: h,
      body: json !== undefined ? JSON.stringify(json) : body,
    });
    const text = await res.text();
    let parsed;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  enqueue(job, options) {
    return this.request("POST", "/v1/jobs", { json: job, ...options });
  }

  /** The job as GET /v1/jobs/{id} shows it, read with the admin token: any job, whichever token
   * enqueued it (an enqueue token sees only its own). */
  getJob(id) {
    return this.request("GET", `/v1/jobs/${id}`, { token: TOKENS.admin });
  }

  /**
   * Delivers a batch straight to the consumer's queue handler and returns its decisions. The
   * consumer acks a batch whose every message it acks with one `ackAll`; `explicitAcks` then
   * lists them all, as the tests read acks per message.
   */
  async deliver(queue, messages) {
    const consumer = await this.mf.getWorker(this.consumerName);
    const batch = messages.map((m, i) => ({ id: m.id ?? `msg-${i}-${Date.now()}`, timestamp: new Date(), attempts: 1, ...m }));
    const result = await consumer.queue(queue, batch);
    return result.ackAll ? { ...result, explicitAcks: batch.map((m) => m.id) } : result;
  }

  async count(sql, ...params) {
    const row = await this.db.prepare(sql).bind(...params).first();
    return Object.values(row)[0];
  }

  /** Runs `cf-jobs args...` against the producer with the admin token, as an operator would (no
   * terminal: plain lines, no colours); resolves to its exit code and output. */
  async cli(...args) {
    const base = String(await this.mf.ready).replace(/\/$/, "");
    const child = spawn(join(ROOT, "node_modules", ".bin", "cf-jobs"), args, {
      env: { ...process.env, CF_JOBS_URL: base, CF_JOBS_TOKEN: TOKENS.admin, NO_COLOR: "1" },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
  }

  /** `waitFor` as a method: most tests hold only the platform. */
  waitFor(probe, options) {
    return waitFor(probe, options);
  }

  /** Waits until the chain job `id` heads has left `running`; returns that job. */
  waitForChain(id) {
    return this.waitFor(
      async () => {
        const { body } = await this.getJob(id);
        return body.chain && body.chain.status !== "running" ? body : null;
      },
      { what: `chain ${id} to finish` },
    );
  }

  /** Waits until the job's status is one of `statuses`; returns the job. */
  async waitForStatus(id, statuses, options) {
    const wanted = [].concat(statuses);
    return this.waitFor(
      async () => {
        const { body } = await this.getJob(id);
        return wanted.includes(body.status) ? body : null;
      },
      { what: `job ${id} to be ${wanted.join("|")}`, ...options },
    );
  }

  dispose() {
    return this.mf.dispose();
  }
}

/**
 * For a test file that runs against one platform and one local app server: registers the hooks
 * that start both before its tests and stop them after, and hands them to `ready` once up.
 */
export function withPlatformAndApp(ready, platformOptions = {}) {
  let started;
  before(async () => {
    const app = await startAppServer();
    started = { app, p: await startPlatform(platformOptions) };
    ready(started);
  });
  after(async () => {
    await started.p.dispose();
    await started.app.close();
  });
}
