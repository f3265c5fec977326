// Flow control per key (docs/app-guide.md "Flow control"), on the built workers on local
// workerd: a team's type bounds, per tenant, how many of its jobs run at once and how many start
// per second, counted in one Durable Object per key (consumer/src/flow_limiter.rs), and a job may
// bring its own key and limits, whatever its type; a job held
// back waits without spending an attempt; a 429 can throttle without counting. The endpoint is a
// real local HTTP server that counts, per tenant, the requests in flight and when each arrived.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { startPlatform, TOKENS } from "./support/platform.mjs";

/**
 * Answers every delivery after `delayMs` (`/delay/<ms>/...`: after that), counting per tenant
 * what is in flight; `/429/<n>` answers 429 n times per job first.
 */
async function startTenantServer(delayMs) {
  const inFlight = new Map();
  const maxInFlight = new Map();
  const arrivals = new Map();
  const seen = new Map();
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const { id, payload } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const tenant = payload.tenant;
      const times = (seen.get(id) ?? 0) + 1;
      seen.set(id, times);
      const throttle = /^\/429\/(\d+)$/.exec(req.url);
      if (throttle && times <= Number(throttle[1])) {
        res.writeHead(429, { "retry-after": "1", "content-type": "application/json" });
        return res.end("{}");
      }
      arrivals.set(tenant, [...(arrivals.get(tenant) ?? []), Date.now()]);
      inFlight.set(tenant, (inFlight.get(tenant) ?? 0) + 1);
      maxInFlight.set(tenant, Math.max(maxInFlight.get(tenant) ?? 0, inFlight.get(tenant)));
      const delay = Number(/^\/delay\/(\d+)\//.exec(req.url)?.[1] ?? delayMs);
      setTimeout(() => {
        inFlight.set(tenant, inFlight.get(tenant) - 1);
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ ok: true }));
      }, delay);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${server.address().port}`;
  return { base, maxInFlight, arrivals, seen, close: () => new Promise((r) => server.close(r)) };
}

let app, p;
before(async () => {
  app = await startTenantServer(150);
  p = await startPlatform();
});
after(async () => {
  await p?.dispose();
  await app?.close();
});

const putType = (name, definition) => p.request("PUT", `/v1/admin/types/${name}`, { json: definition, token: TOKENS.admin });

async function enqueueAll(jobs) {
  const ids = [];
  for (let i = 0; i < jobs.length; i += 100) {
    const res = await p.request("POST", "/v1/jobs/batch", { json: { jobs: jobs.slice(i, i + 100) } });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    ids.push(...res.body.jobs.map((j) => j.id));
  }
  return ids;
}

const waitAll = (type, n, timeoutMs) =>
  p.waitFor(async () => (await p.count(`SELECT COUNT(*) FROM jobs WHERE type = ? AND status IN ('succeeded', 'dead')`, type)) === n, {
    timeoutMs,
    everyMs: 500,
    what: `${n} ${type} jobs to finish`,
  });

test("concurrency 2 per tenant: 10 tenants x 50 jobs, never more than 2 of a tenant in flight, all succeed, no attempt spent waiting", async () => {
  const res = await putType("sync_tenant", { family: "high", target: { url: `${app.base}/sync` }, flow: { key: "tenant", concurrency: 2 } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const jobs = [];
  for (let i = 0; i < 50; i++) for (let t = 0; t < 10; t++) jobs.push({ type: "sync_tenant", payload: { tenant: `t${t}`, i } });
  await enqueueAll(jobs);
  await waitAll("sync_tenant", 500, 120_000);
  assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE type = 'sync_tenant' AND status = 'succeeded'"), 500);
  assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE type = 'sync_tenant' AND attempts != 1"), 0, "waiting spent no attempt");
  for (let t = 0; t < 10; t++) {
    assert.ok(app.maxInFlight.get(`t${t}`) <= 2, `tenant t${t}: ${app.maxInFlight.get(`t${t}`)} in flight at once`);
  }
  assert.ok([...app.maxInFlight.values()].some((n) => n === 2), "the limit is 2, not 1: some tenant ran 2 at once");

  // What the operator reads: per key, every start and how many waited; nothing runs or waits now.
  const view = (await p.request("GET", "/v1/admin/types/sync_tenant/flow", { token: TOKENS.admin })).body;
  assert.deepEqual(view.flow, { key: "tenant", concurrency: 2, rate: null, throttle_on_429: false });
  assert.equal(view.keys.length, 10);
  for (const k of view.keys) {
    assert.equal(k.started, 50, JSON.stringify(k));
    assert.deepEqual([k.running, k.waiting], [0, 0], JSON.stringify(k));
  }
  assert.ok(view.keys.reduce((n, k) => n + k.waited, 0) > 0, "a limit held jobs back");
  const one = (await p.request("GET", "/v1/admin/types/sync_tenant/flow?key=t3", { token: TOKENS.admin })).body;
  assert.deepEqual(one.keys.map((k) => k.key), ["t3"]);
  const metrics = (await p.request("GET", "/metrics", { token: TOKENS.admin })).body;
  assert.match(metrics, /^job_flow_started_total\{job_type="sync_tenant"\} 500$/m);
  const waited = view.keys.reduce((n, k) => n + k.waited, 0);
  assert.match(metrics, new RegExp(`^job_flow_waited_total\\{job_type="sync_tenant"\\} ${waited}$`, "m"));
});

test("rate 5 per second per tenant: the endpoint sees 5/s +-10 % per tenant over 20 s, never 6 within 800 ms", async () => {
  const res = await putType("poll_tenant", { family: "default", target: { url: `${app.base}/poll` }, flow: { key: "tenant", rate: { limit: 5, period_secs: 1 } } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const jobs = [];
  for (let i = 0; i < 100; i++) for (const t of ["r1", "r2", "r3"]) jobs.push({ type: "poll_tenant", payload: { tenant: t, i } });
  await enqueueAll(jobs);
  await waitAll("poll_tenant", 300, 90_000);
  assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE type = 'poll_tenant' AND attempts != 1"), 0, "waiting spent no attempt");
  for (const t of ["r1", "r2", "r3"]) {
    const times = app.arrivals.get(t).sort((a, b) => a - b);
    assert.equal(times.length, 100);
    // Starts are spaced 200 ms apart; each reaches the endpoint after the limiter's time by as
    // much as the runtime's timer and the machine's load delay it (up to ~100 ms on a busy CI
    // machine), so a window of 800 ms holds the bound. Without the limiter, 100 arrive at once.
    for (let i = 0; i + 5 < times.length; i++) {
      assert.ok(times[i + 5] - times[i] >= 800, `tenant ${t}: 6 requests within ${times[i + 5] - times[i]} ms`);
    }
    const perSecond = (times.length - 1) / ((times.at(-1) - times[0]) / 1000);
    assert.ok(perSecond >= 4.5 && perSecond <= 5.5, `tenant ${t}: ${perSecond.toFixed(2)} per second`);
  }
});

test("a 429 the type declares a throttle waits its Retry-After without spending an attempt; undeclared, it counts", async () => {
  const def = (throttle_on_429) => ({ family: "default", target: { url: `${app.base}/429/2` }, retry: "quick", flow: { concurrency: 10, throttle_on_429 } });
  assert.equal((await putType("throttled_sync", def(true))).status, 201);
  assert.equal((await putType("counted_sync", def(false))).status, 201);
  const [throttled] = await enqueueAll([{ type: "throttled_sync", payload: { tenant: "q" } }]);
  const [counted] = await enqueueAll([{ type: "counted_sync", payload: { tenant: "q" } }]);
  const a = await p.waitForStatus(throttled, "succeeded", { timeoutMs: 30_000 });
  const b = await p.waitForStatus(counted, "succeeded", { timeoutMs: 30_000 });
  assert.equal(app.seen.get(throttled), 3);
  assert.equal(a.attempts, 1, "two 429s waited, one attempt");
  assert.equal(b.attempts, 3, "without the declaration, each 429 is an attempt");
});

test("a job's own flow_key keys it in place of its payload field; a type without flow control refuses one", async () => {
  assert.equal((await putType("one_at_a_time", { family: "default", target: { url: `${app.base}/own` }, flow: { key: "tenant", concurrency: 1 } })).status, 201);
  const ids = await enqueueAll(["k1", "k2", "k3", "k4"].map((flow_key) => ({ type: "one_at_a_time", payload: { tenant: "shared" }, flow_key })));
  for (const id of ids) await p.waitForStatus(id, "succeeded", { timeoutMs: 30_000 });
  assert.ok(app.maxInFlight.get("shared") >= 2, `four keys, one tenant: ${app.maxInFlight.get("shared")} in flight at once`);
  const refused = await p.enqueue({ type: "noop", payload: {}, flow_key: "k" });
  assert.deepEqual([refused.status, refused.body.error?.field], [422, "flow_key"]);
  const long = await p.enqueue({ type: "one_at_a_time", payload: {}, flow_key: "x".repeat(257) });
  assert.deepEqual([long.status, long.body.error?.field], [422, "flow_key"]);
});

test("a job brings its own key and limits: an http job gets flow control, and a type's job overrides its type's limits", async () => {
  // http has no flow control of its own: each job names its key and limits, as QStash's do.
  const http = (tenant, i) => ({
    type: "http",
    payload: { url: `${app.base}/own-limits`, body: { id: `${tenant}-${i}`, payload: { tenant } } },
    flow_key: `api/${tenant}`,
    flow_limits: { concurrency: 1 },
  });
  const jobs = [];
  for (let i = 0; i < 12; i++) jobs.push(http("h1", i), http("h2", i));
  const ids = await enqueueAll(jobs);
  // A type that lets 4 of a tenant run at once; these jobs say 1.
  assert.equal((await putType("four_at_a_time", { family: "default", target: { url: `${app.base}/override` }, flow: { key: "tenant", concurrency: 4 } })).status, 201);
  ids.push(...(await enqueueAll(Array.from({ length: 12 }, () => ({ type: "four_at_a_time", payload: { tenant: "ov" }, flow_limits: { concurrency: 1 } })))));
  for (const id of ids) await p.waitForStatus(id, "succeeded", { timeoutMs: 60_000 });
  assert.deepEqual(["h1", "h2", "ov"].map((t) => app.maxInFlight.get(t)), [1, 1, 1], "one at a time per key");
  assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE (type = 'http' AND flow_key LIKE 'api/%' OR type = 'four_at_a_time') AND attempts != 1"), 0);
  const shown = await p.request("GET", "/v1/admin/types/http/flow", { token: TOKENS.admin });
  assert.deepEqual(shown.body.keys.map((k) => [k.key, k.started]).sort(), [["api/h1", 12], ["api/h2", 12]]);

  // Limits without a key, for a type without flow control, have nothing to count by.
  const keyless = await p.enqueue({ type: "http", payload: { url: `${app.base}/own-limits` }, flow_limits: { concurrency: 1 } });
  assert.deepEqual([keyless.status, keyless.body.error?.field], [422, "flow_key"]);
  const bad = await p.enqueue({ type: "http", payload: { url: `${app.base}/own-limits` }, flow_key: "k", flow_limits: { rate: { limit: 0, period_secs: 1 } } });
  assert.deepEqual([bad.status, bad.body.error?.field], [422, "flow_limits.rate.limit"]);
});

test("the runtime restarting (the limiters with it) between two jobs of a key: the second still waits out the first's period, and runs", async () => {
  const res = await putType("restart_rate", { family: "default", target: { url: `${app.base}/restart` }, flow: { key: "tenant", rate: { limit: 1, period_secs: 4 } } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const [first] = await enqueueAll([{ type: "restart_rate", payload: { tenant: "z" } }]);
  await p.waitForStatus(first, "succeeded");
  // Every Worker and every limiter's memory gone; D1 and the limiters' storage kept.
  await p.restart();
  const [second] = await enqueueAll([{ type: "restart_rate", payload: { tenant: "z" } }]);
  const job = await p.waitForStatus(second, "succeeded", { timeoutMs: 30_000 });
  const [a, b] = app.arrivals.get("z");
  assert.ok(b - a >= 3_900, `the second started ${b - a} ms after the first: a limiter that forgot would not wait`);
  assert.equal(job.attempts, 1, "its wait spent no attempt");
});
