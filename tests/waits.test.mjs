// Bounded waits: no answer from an endpoint and no backoff parks a job for good (every retry
// waits at most MAX_RETRY_DELAY_SECS, 30 h), and the queues' own delay limit is the setting
// QUEUE_MAX_DELAY_SECS (default 12 h) in both Workers: a wait beyond it is kept in D1 with no
// message, not handed to the queue. The built WASM on local workerd with real D1; each batch
// is delivered by hand, so every ack and retry decision is seen.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { jobMessage, startPlatform } from "./support/platform.mjs";
import { startAppServer } from "./support/app_server.mjs";
import { tick } from "./support/sweep.mjs";

const RETRY_CAP_SECS = 30 * 3600;

let app;
before(async () => {
  app = await startAppServer();
});
after(() => app.close());

const row = (p, id) => p.db.prepare("SELECT * FROM jobs WHERE id = ?").bind(id).first();

/** Enqueues an http job to `path` and delivers its message once; returns the id, the queue's decisions and the row after. */
async function runOnce(p, path) {
  const enq = await p.enqueue({ type: "http", payload: { url: app.url(path) } });
  assert.equal(enq.status, 202, JSON.stringify(enq.body));
  const id = enq.body.id;
  const decisions = await p.deliver("jobs-default", [{ id: `m-${id}`, ...jobMessage(id, "http") }]);
  return { id, decisions, job: await row(p, id) };
}

describe("retry waits are capped (default queue limit)", () => {
  let p;
  before(async () => {
    p = await startPlatform({ manualDelivery: true });
  });
  after(() => p.dispose());

  for (const [name, retryAfter] of [
    ["999999999 seconds", "999999999"],
    ["an HTTP-date in the year 9999", "Fri, 31 Dec 9999 23:59:59 GMT"],
  ]) {
    test(`Retry-After: ${name} waits 30 h at most, kept in D1 with no queue delay`, async () => {
      const path = `/forever-${retryAfter.length}`;
      app.script(path, [{ status: 503, headers: { "retry-after": retryAfter } }]);
      const before = Date.now();
      const { id, decisions, job } = await runOnce(p, path);
      // 30 h is beyond the queue's 12 h: no retry message, the job waits in D1.
      assert.deepEqual(decisions.retryMessages, []);
      assert.deepEqual(decisions.explicitAcks, [`m-${id}`]);
      assert.equal(job.status, "retrying");
      assert.equal(job.sent_at, null);
      const finished = await p.db.prepare("SELECT finished_at FROM job_runs WHERE job_id = ?").bind(id).first("finished_at");
      assert.equal(job.run_at - finished, RETRY_CAP_SECS * 1000, "run_at is exactly the cap after the attempt");
      assert.ok(job.run_at <= Date.now() + RETRY_CAP_SECS * 1000 && job.run_at > before, `${job.run_at}`);
    });
  }

  test("a huge backoff (the default policy at attempt 20: 182 days) waits 30 h at most", async () => {
    app.script("/down", [{ status: 500 }]);
    const enq = await p.enqueue({ type: "http", payload: { url: app.url("/down") }, max_attempts: 30 });
    await p.db.prepare("UPDATE jobs SET attempts = 19 WHERE id = ?").bind(enq.body.id).run();
    const decisions = await p.deliver("jobs-default", [jobMessage(enq.body.id, "http")]);
    assert.deepEqual(decisions.retryMessages, []);
    const job = await row(p, enq.body.id);
    assert.equal(job.attempts, 20);
    assert.equal(job.status, "retrying");
    const finished = await p.db.prepare("SELECT finished_at FROM job_runs WHERE job_id = ?").bind(enq.body.id).first("finished_at");
    assert.equal(job.run_at - finished, RETRY_CAP_SECS * 1000);
  });

  test("a 120 s wait fits the default 12 h limit: a queue retry with that delay", async () => {
    app.script("/busy-default", [{ status: 503, headers: { "retry-after": "120" } }]);
    const { decisions, job } = await runOnce(p, "/busy-default");
    assert.deepEqual(decisions.retryMessages.map((m) => m.delaySeconds), [120]);
    assert.equal(job.status, "retrying");
  });
});

describe("QUEUE_MAX_DELAY_SECS=60 in both Workers", () => {
  let p;
  before(async () => {
    const limit = { QUEUE_MAX_DELAY_SECS: "60" };
    p = await startPlatform({ manualDelivery: true, consumerBindings: limit, producerBindings: limit });
  });
  after(() => p.dispose());

  test("a 120 s Retry-After is kept in D1 (retrying, no message) instead of a queue delay", async () => {
    app.script("/busy", [{ status: 503, headers: { "retry-after": "120" } }]);
    const { id, decisions, job } = await runOnce(p, "/busy");
    assert.deepEqual(decisions.retryMessages, []);
    assert.deepEqual(decisions.explicitAcks, [`m-${id}`]);
    assert.equal(job.status, "retrying");
    assert.equal(job.sent_at, null);
    const finished = await p.db.prepare("SELECT finished_at FROM job_runs WHERE job_id = ?").bind(id).first("finished_at");
    assert.equal(job.run_at - finished, 120_000);
  });

  test("a 90-150 s policy backoff (attempt 3) is held too; a 60 s one is a queue retry", async () => {
    app.script("/flaky", [{ status: 500 }]);
    const enq = await p.enqueue({ type: "http", payload: { url: app.url("/flaky") } });
    await p.db.prepare("UPDATE jobs SET attempts = 2 WHERE id = ?").bind(enq.body.id).run();
    const held = await p.deliver("jobs-default", [jobMessage(enq.body.id, "http")]);
    assert.deepEqual(held.retryMessages, []);
    const job = await row(p, enq.body.id);
    assert.deepEqual([job.status, job.attempts, job.sent_at], ["retrying", 3, null]);

    app.script("/limit", [{ status: 503, headers: { "retry-after": "60" } }]);
    const { decisions } = await runOnce(p, "/limit");
    assert.deepEqual(decisions.retryMessages.map((m) => m.delaySeconds), [60]);
  });

  test("the producer holds a 120 s delay as scheduled; the sweep sends it once due within 60 s", async () => {
    const now = Date.now();
    const held = await p.enqueue({ type: "noop", delay_seconds: 120 });
    assert.equal(held.body.status, "scheduled");
    const sent = await p.enqueue({ type: "noop", delay_seconds: 60 });
    assert.equal(sent.body.status, "queued");
    await tick(p, now);
    assert.equal((await row(p, held.body.id)).status, "scheduled", "120 s out: beyond the limit");
    await tick(p, now + 61_000);
    const released = await row(p, held.body.id);
    assert.equal(released.status, "queued");
    assert.ok(released.sent_at, "sent with the delay that remains");
  });
});

describe("an invalid QUEUE_MAX_DELAY_SECS", () => {
  let p;
  const lines = [];
  before(async () => {
    const bad = { QUEUE_MAX_DELAY_SECS: "86401" };
    p = await startPlatform({
      manualDelivery: true,
      consumerBindings: bad,
      producerBindings: bad,
      onLog: ({ message }) => {
        lines.push(message);
      },
    });
  });
  after(() => p.dispose());

  test("keeps the 12 h default, and each Worker says so in a warning, once", async () => {
    const warned = () => lines.filter((l) => l.includes('QUEUE_MAX_DELAY_SECS="86401" is not 1 to 86400; using the default 43200')).length;
    app.script("/half-day", [{ status: 503, headers: { "retry-after": "43200" } }]);
    const enq = await p.enqueue({ type: "http", payload: { url: app.url("/half-day") } });
    const byProducer = warned();
    assert.ok(byProducer >= 1, "the producer warns");
    const decisions = await p.deliver("jobs-default", [jobMessage(enq.body.id, "http")]);
    assert.ok(warned() > byProducer, "the consumer warns");
    assert.deepEqual(decisions.retryMessages.map((m) => m.delaySeconds), [43_200]);
    const late = await p.enqueue({ type: "noop", delay_seconds: 43_201 });
    assert.equal(late.body.status, "scheduled");
    const warnings = warned();
    await p.enqueue({ type: "noop", payload: {} });
    await p.deliver("jobs-default", [jobMessage(late.body.id, "noop")]);
    assert.equal(warned(), warnings, "read once per isolate: no warning per request or batch");
  });
});
