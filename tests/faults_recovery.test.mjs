// Faults and recovery on the built workers (real D1, real local queues, the real sweep): a DLQ
// arrival never kills a live job, a D1 outage backs off instead of exhausting the queue's
// retries, a message the queue dropped is sent again, the outbox waits for a delayed job's due
// time, and a backlog of stuck or held jobs is recovered in one tick. Where a test needs a
// fault in the past (a message sent two hours ago and lost) it writes that job's own columns,
// which is all the sweep reads.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { jobMessage, startPlatform, TOKENS, withPlatformAndApp } from "./support/platform.mjs";
import { tick, unsentProducer, MINUTE, HOUR } from "./support/sweep.mjs";

const row = (p, id) => p.db.prepare("SELECT * FROM jobs WHERE id = ?").bind(id).first();
const set = (p, id, sql, ...params) => p.db.prepare(`UPDATE jobs SET ${sql} WHERE id = ?`).bind(...params, id).run();
const arrivals = (p, id) => p.count("SELECT count(*) FROM dead_letters WHERE job_id = ?", id);
const admin = { token: TOKENS.admin };

/** A platform for the tests of one describe block. */
function platform(options) {
  const holder = {};
  before(async () => {
    holder.p = await startPlatform(options);
  });
  after(() => holder.p.dispose());
  return holder;
}

/** `n` jobs written straight into D1 in one statement, ids `<prefix>00001`...; `cols` sets columns. */
async function insertJobs(p, n, prefix, cols) {
  const now = Date.now();
  const values = { type: "noop", family: "default", status: "queued", payload: "{}", max_attempts: 5, attempts: 0, runs: 0, run_at: now, created_at: now, updated_at: now, ...cols };
  const names = Object.keys(values);
  await p.db
    .prepare(
      `WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?) ` +
        `INSERT INTO jobs (id, ${names.join(", ")}) SELECT printf('%s%05d', ?, n), ${names.map(() => "?").join(", ")} FROM seq`,
    )
    .bind(n, prefix, ...Object.values(values))
    .run();
}

describe("a DLQ arrival never kills a live job", () => {
  let p, app;
  withPlatformAndApp((started) => ({ p, app } = started), { manualDelivery: true });

  test("a replayed job stays live when an old DLQ message for it arrives, and still runs", async () => {
    app.script("/replayed", [{ status: 404 }, { status: 200 }]);
    const { id } = (await p.enqueue({ type: "http", payload: { url: app.url("/replayed") } })).body;
    await p.deliver("jobs-default", [jobMessage(id, "http")]);
    assert.equal((await row(p, id)).status, "dead", "a 404 is dead at once");
    const replay = await p.request("POST", `/v1/admin/dead-letters/${id}/replay`, admin);
    assert.equal(replay.status, 200);

    // The message the consumer sent to the DLQ when the job died arrives after the replay.
    const dlq = await p.deliver("jobs-default-dlq", [{ id: "old", ...jobMessage(id, "http") }]);
    assert.deepEqual(dlq.explicitAcks, ["old"]);
    assert.equal(await arrivals(p, id), 1, "the arrival is listed");
    assert.equal((await row(p, id)).status, "queued", "the replay is live");

    await p.deliver("jobs-default", [jobMessage(id, "http")]);
    const job = (await p.getJob(id)).body;
    assert.equal(job.status, "succeeded");
    assert.deepEqual(job.runs.map((r) => r.outcome), ["dead", "succeeded"]);
  });

  test("a running job keeps its attempt when a DLQ message for it arrives", async () => {
    app.script("/slow", [{ status: 200, delayMs: 1500 }]);
    const { id } = (await p.enqueue({ type: "http", payload: { url: app.url("/slow") } })).body;
    const running = p.deliver("jobs-default", [jobMessage(id, "http")]);
    await p.waitForStatus(id, "running");
    await p.deliver("jobs-default-dlq", [jobMessage(id, "http")]);
    assert.equal((await row(p, id)).status, "running", "its lease is live: left alone");
    await running;
    const job = (await p.getJob(id)).body;
    assert.deepEqual([job.status, job.attempts, job.runs.length], ["succeeded", 1, 1]);
  });

  test("a waiting job with no attempt left is dead when the queue gives its message up", async () => {
    const { id } = (await p.enqueue({ type: "noop", max_attempts: 2 })).body;
    await set(p, id, "status = 'retrying', attempts = 2, runs = 2");
    await p.deliver("jobs-default-dlq", [jobMessage(id, "noop")]);
    const job = await row(p, id);
    assert.deepEqual([job.status, job.error_class], ["dead", "delivery_exhausted"]);
  });
});

describe("a D1 outage backs off with the message's deliveries", () => {
  const it = platform({ manualDelivery: true });

  test("the retry delay grows to 15 minutes while D1 fails; once it is back the job runs once", async () => {
    const { p } = it;
    const { id } = (await p.enqueue({ type: "noop" })).body;
    await p.db.prepare("ALTER TABLE jobs RENAME TO jobs_down").run();
    const delays = [];
    for (const attempts of [1, 2, 3, 7, 8, 60]) {
      const res = await p.deliver("jobs-default", [{ id: `m${attempts}`, attempts, ...jobMessage(id, "noop") }]);
      assert.deepEqual(res.explicitAcks, [], "nothing acked while D1 is down");
      delays.push(res.retryMessages[0].delaySeconds);
    }
    assert.deepEqual(delays, [10, 20, 40, 640, 900, 900]);
    const dlq = await p.deliver("jobs-default-dlq", [{ id: "d", attempts: 4, ...jobMessage(id, "noop") }]);
    assert.deepEqual(dlq.retryMessages.map((m) => m.delaySeconds), [80], "the DLQ consumer backs off too");

    await p.db.prepare("ALTER TABLE jobs_down RENAME TO jobs").run();
    const back = await p.deliver("jobs-default", [{ id: "m61", attempts: 61, ...jobMessage(id, "noop") }]);
    assert.deepEqual(back.explicitAcks, ["m61"]);
    const job = (await p.getJob(id)).body;
    assert.deepEqual([job.status, job.attempts, job.runs.length], ["succeeded", 1, 1]);
  });
});

describe("a message the queue lost is sent again (real queues)", () => {
  const it = platform({ extraWorkers: [unsentProducer()] });
  const unsent = (job) => it.p.request("POST", "/v1/jobs", { json: job, worker: "jobs-producer-unsent" });

  test("a DLQ arrival for a waiting job puts it back in the outbox; the sweep re-sends it and it runs", async () => {
    const { p } = it;
    const t0 = Date.now();
    // D1 believes its message is in the queue (a send was recorded), but the queue gave it up.
    const { id } = (await unsent({ type: "noop" })).body;
    await set(p, id, "sent_at = ?", t0);
    const { run_at } = await row(p, id);
    await p.deliver("jobs-default-dlq", [jobMessage(id, "noop")]);
    const job = await row(p, id);
    assert.deepEqual([job.status, job.sent_at, job.run_at], ["queued", null, run_at], "back in the outbox, run_at kept");
    assert.equal(await arrivals(p, id), 1);

    await tick(p, t0 + 6 * MINUTE);
    const done = await p.waitForStatus(id, "succeeded");
    assert.equal(done.runs.length, 1);
  });

  test("a job whose message was dropped is re-sent once the stranded bound has passed; one inside it is not", async () => {
    const { p } = it;
    const now = Date.now();
    const lostQueued = (await unsent({ type: "noop" })).body.id;
    const lostRetry = (await unsent({ type: "noop" })).body.id;
    const recent = (await unsent({ type: "noop" })).body.id;
    // Sent two hours ago (recorded), never delivered: dropped past the DLQ's retries.
    await set(p, lostQueued, "sent_at = ?, run_at = ?", now - 2 * HOUR, now - 2 * HOUR);
    await set(p, lostRetry, "status = 'retrying', attempts = 1, runs = 1, sent_at = ?, run_at = ?", now - 2 * HOUR, now - 61 * MINUTE);
    await set(p, recent, "sent_at = ?, run_at = ?", now - 30 * MINUTE, now - 30 * MINUTE);

    await tick(p, now);
    assert.equal((await p.waitForStatus(lostQueued, "succeeded")).attempts, 1);
    const retried = await p.waitForStatus(lostRetry, "succeeded");
    assert.equal(retried.attempts, 2);
    const waiting = await row(p, recent);
    assert.deepEqual([waiting.status, waiting.sent_at], ["queued", now - 30 * MINUTE], "inside the 1 h bound: left alone");
  });

  test("the outbox grace counts from a job's due time: a delayed job is not re-sent early, an unsent one is once due", async () => {
    const { p } = it;
    const t0 = Date.now();
    const delayed = (await p.enqueue({ type: "noop", delay_seconds: 600 })).body.id; // sent with a 10 min delay
    const lost = (await unsent({ type: "noop", delay_seconds: 600 })).body.id; // its send failed
    await tick(p, t0 + 6 * MINUTE);
    assert.equal((await row(p, delayed)).sent_at, null, "due in 4 min: its message is not late");
    assert.equal((await row(p, lost)).sent_at, null, "nor is this one, yet");
    await tick(p, t0 + 16 * MINUTE);
    assert.ok((await row(p, lost)).sent_at, "due 6 min ago and never sent: re-sent");
  });
});

describe("recovery at scale", () => {
  const it = platform({ manualDelivery: true });

  test("2,500 expired leases are all rescued in one sweep tick", async () => {
    const { p } = it;
    const now = Date.now();
    await insertJobs(p, 2500, "lease", {
      status: "running", attempts: 1, runs: 1, run_at: now - 10 * MINUTE, started_at: now - 10 * MINUTE, lease_until: now - MINUTE,
    });
    const started = Date.now();
    await tick(p, now);
    const took = Date.now() - started;
    assert.equal(await p.count("SELECT count(*) FROM jobs WHERE id LIKE 'lease%' AND status = 'running'"), 0);
    assert.equal(await p.count("SELECT count(*) FROM jobs WHERE id LIKE 'lease%' AND status = 'queued' AND sent_at IS NOT NULL"), 2500, "requeued and sent");
    assert.equal(await p.count("SELECT count(*) FROM job_runs WHERE job_id LIKE 'lease%' AND error_class = 'lease_expired'"), 2500, "every lost attempt recorded");
    console.log(`rescued 2,500 in one tick in ${took} ms`);
  });

  test("a resume releases one page of held jobs and answers how many remain; the sweep releases the rest", async () => {
    const { p } = it;
    const now = Date.now();
    assert.equal((await p.request("POST", "/v1/admin/pauses", { json: { kind: "type", name: "noop" }, ...admin })).status, 201);
    // What the consumer's claim writes for a paused job: held, its message acked.
    await insertJobs(p, 1200, "held", { held_at: now, sent_at: now });
    const resumed = await p.request("DELETE", "/v1/admin/pauses/type/noop", admin);
    assert.deepEqual([resumed.status, resumed.body.released, resumed.body.remaining], [200, 1000, 200]);
    assert.equal(await p.count("SELECT count(*) FROM jobs WHERE id LIKE 'held%' AND held_at IS NOT NULL"), 200);

    await tick(p, now);
    assert.equal(await p.count("SELECT count(*) FROM jobs WHERE id LIKE 'held%' AND held_at IS NOT NULL"), 0, "all released");
    const last = "held01200";
    assert.ok((await row(p, last)).sent_at, "the sweep's release is sent");
    await p.deliver("jobs-default", [jobMessage(last, "noop")]);
    assert.equal((await row(p, last)).status, "succeeded");
  });
});
