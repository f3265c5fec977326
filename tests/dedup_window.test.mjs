// A dedup key that outlives its job, and debounce (docs/app-guide.md "Dedup windows and
// debounce"), on the built workers on local workerd with real D1 and queues: an enqueue retried
// within the window is answered with the first job, finished or not; a burst of enqueues with one
// key runs once, after the burst, with the last payload, and never later than five quiet periods.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startPlatform } from "./support/platform.mjs";
import { startAppServer } from "./support/app_server.mjs";

let app, p;
before(async () => {
  app = await startAppServer();
  p = await startPlatform();
});
after(async () => {
  await p?.dispose();
  await app?.close();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const keyed = (key) => p.count("SELECT COUNT(*) FROM jobs WHERE dedup_key = ?", key);

test("within its window a dedup key answers with its finished job; past it, or without one, a new job runs", async () => {
  const first = await p.enqueue({ type: "noop", payload: {}, dedup_key: "order-7", dedup_window_seconds: 3 });
  assert.equal(first.status, 202, JSON.stringify(first.body));
  await p.waitForStatus(first.body.id, "succeeded");
  const again = await p.enqueue({ type: "noop", payload: {}, dedup_key: "order-7" });
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.deepEqual([again.body.id, again.body.status, again.body.deduplicated], [first.body.id, "succeeded", true]);
  assert.equal(await keyed("order-7"), 1);

  // Without a window, a finished job frees its key at once.
  const plain = await p.enqueue({ type: "noop", payload: {}, dedup_key: "order-8" });
  await p.waitForStatus(plain.body.id, "succeeded");
  assert.equal((await p.enqueue({ type: "noop", payload: {}, dedup_key: "order-8" })).status, 202);

  await sleep(3_200);
  const later = await p.enqueue({ type: "noop", payload: {}, dedup_key: "order-7" });
  assert.equal(later.status, 202, "the window has passed");
  assert.notEqual(later.body.id, first.body.id);
});

test("a burst of enqueues with one key runs once, after the burst, with the last payload", async () => {
  const ids = [];
  let last;
  for (let n = 0; n < 5; n++) {
    const res = await p.enqueue({ type: "http", payload: { url: app.url("/burst"), body: { n } }, dedup_key: "refresh-42", debounce_seconds: 2 });
    assert.ok([200, 202].includes(res.status), JSON.stringify(res.body));
    ids.push(res.body.id);
    last = Date.now();
    await sleep(300);
  }
  assert.equal(new Set(ids).size, 1, "every enqueue of the burst answers with the one job");
  const job = await p.waitForStatus(ids[0], "succeeded", { timeoutMs: 20_000 });
  const delivered = app.requests("/burst");
  assert.equal(delivered.length, 1);
  assert.deepEqual(JSON.parse(delivered[0].body), { n: 4 });
  // A queue message may run its job up to a second early (the claim's tolerance).
  assert.ok(delivered[0].at - last >= 900, `ran ${delivered[0].at - last} ms after the last enqueue`);
  assert.equal(job.attempts, 1);
});

test("a burst that never pauses still runs, five quiet periods after its first enqueue", async () => {
  const started = Date.now();
  let id;
  let ran = false;
  while (!ran && Date.now() - started < 20_000) {
    const res = await p.enqueue({ type: "http", payload: { url: app.url("/endless"), body: {} }, dedup_key: "endless", debounce_seconds: 2 });
    id ??= res.body.id;
    ran = (await p.getJob(id)).body.status === "succeeded";
    await sleep(250);
  }
  assert.ok(ran, "the burst's job ran while the burst went on");
  const [first] = app.requests("/endless");
  // Due 10 s after the first enqueue; its message comes back within a queue batch's wait.
  assert.ok(first.at - started >= 8_500 && first.at - started <= 14_000, `ran ${first.at - started} ms after the burst began`);
});

test("a window or a debounce needs a dedup key; a debounce takes no delay of its own; each has its range", async () => {
  const field = async (job) => {
    const res = await p.enqueue({ type: "noop", payload: {}, ...job });
    return [res.status, res.body.error?.code, res.body.error?.field];
  };
  assert.deepEqual(await field({ dedup_window_seconds: 60 }), [422, "invalid_field", "dedup_window_seconds"]);
  assert.deepEqual(await field({ debounce_seconds: 5 }), [422, "invalid_field", "debounce_seconds"]);
  assert.deepEqual(await field({ dedup_key: "k", debounce_seconds: 5, delay_seconds: 3 }), [422, "conflicting_fields", "debounce_seconds"]);
  assert.deepEqual(await field({ dedup_key: "k", dedup_window_seconds: 604_801 }), [422, "out_of_range", "dedup_window_seconds"]);
  assert.deepEqual(await field({ dedup_key: "k", debounce_seconds: 1 }), [422, "out_of_range", "debounce_seconds"]);
  const step = await p.enqueue({ type: "noop", payload: {}, steps: [{ type: "noop", debounce_seconds: 5 }] });
  assert.deepEqual([step.status, step.body.error?.field], [422, "steps[0].debounce_seconds"]);
});
